"""A 64-rank failure: one root cause on one rank, the watchdog lines of the other 63 ranks
grouped into one collateral finding with a rank list, torchrun's wrapper as collateral."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose
from traintriage.report.render import rank_ranges

RANKS = 64
FAILING = 41


def _log() -> str:
    lines = [f"[default{r}]:[rank{r}]: 2024-05-01 10:00:{r % 60:02d},000 INFO step 100 loss 2.{r:02d}" for r in range(RANKS)]
    lines.append(f"[default{FAILING}]:[rank{FAILING}]: Traceback (most recent call last):")
    lines.append(f'[default{FAILING}]:[rank{FAILING}]:   File "/workspace/train.py", line 88, in train_step')
    lines.append(f"[default{FAILING}]:[rank{FAILING}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. "
                 "GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this "
                 "process has 78.11 GiB memory in use. Of the allocated memory 77.20 GiB is allocated by PyTorch, and "
                 "210.00 MiB is reserved by PyTorch but unallocated.")
    for rank in range(RANKS):
        if rank != FAILING:
            lines.append(
                f"[default{rank}]:[rank{rank}]:[E501 10:12:{rank % 60:02d}.000000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] "
                f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4821, OpType=ALLREDUCE, NumelIn=26214400, "
                f"NumelOut=26214400, Timeout(ms)=600000) ran for 600{rank:03d} milliseconds before timing out.")
    lines += ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "Root Cause (first observed failure):",
              "[0]:", "  time      : 2024-05-01_10:02:11", "  host      : gpu-node05",
              f"  rank      : {FAILING} (local_rank: 1)", "  exitcode  : 1 (pid: 41237)", "  error_file: <N/A>"]
    return "\n".join(lines) + "\n"


def test_watchdog_lines_of_63_ranks_are_one_collateral_finding(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text(_log())
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-oom"
    assert diagnosis.initiating_rank == FAILING
    timeouts = [c for c in diagnosis.collateral if c.id == "nccl-watchdog-timeout"]
    assert len(timeouts) == 1
    assert timeouts[0].ranks == [r for r in range(RANKS) if r != FAILING]
    assert rank_ranges(timeouts[0].ranks) == f"0-{FAILING - 1},{FAILING + 1}-{RANKS - 1}"
    assert timeouts[0].count == RANKS - 1
    assert "elastic-child-failed" in {c.id for c in diagnosis.collateral}
    assert diagnosis.ranks.failed == [FAILING]


def test_collateral_count_covers_lines_beyond_the_evidence_cap(tmp_path: Path) -> None:
    from traintriage.match.compiler import SIGNATURE_CAP

    repeats = SIGNATURE_CAP + 500
    watchdog = ("[rank5]:[E501 10:12:11.000000000 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=4821, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=600000) ran for 600074 milliseconds before timing out.\n")
    path = tmp_path / "job.log"
    path.write_text(_log() + watchdog * repeats)
    diagnosis = diagnose([str(path)])
    timeouts = next(c for c in diagnosis.collateral if c.id == "nccl-watchdog-timeout")
    assert timeouts.count == RANKS - 1 + repeats
