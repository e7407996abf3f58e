"""torchrun's failure report for one rank, as its agent prints it, for tests that build a launcher's log."""

from __future__ import annotations


def failure_report(rank: int, exitcode: int, signal: str) -> list[str]:
    """The ChildFailedError block naming `rank` as the root cause, killed by `signal` (exit code -N)."""
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-06_03:14:29",
        "  host      : node-a",
        f"  rank      : {rank} (local_rank: {rank})",
        f"  exitcode  : {exitcode} (pid: 17344)",
        "  error_file: <N/A>",
        f"  traceback : Signal {-exitcode} ({signal}) received by PID 17344",
        "============================================================",
    ]
