"""A worker that outlived the launcher's SIGTERM is SIGKILLed by the launcher: its `exitcode: -9` in the
failure report is the run being stopped, not the cause. The ranks that timed out waiting for it are what
failed, and the silent rank is where it started."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

_STEPS = [f"[rank{rank}]: step {step} loss {2.5 - step / 10:.3f}" for step in range(1, 6) for rank in (0, 1, 2)]
_TIMEOUTS = [
    f"[rank{rank}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:{line}] "
    f"Timed out waiting 15000ms for {op} operation to complete"
    for rank, line, op in ((0, 78, "recv"), (2, 129, "send"))
]
_REPORT = [
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  time      : 2026-12-08_02:17:42",
    "  host      : node-a",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : -9 (pid: 17344)",
    "  error_file: <N/A>",
    "  traceback : Signal 9 (SIGKILL) received by PID 17344",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-12-08_02:17:42",
    "  host      : node-a",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : 1 (pid: 17343)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]
_SIGTERM = "W1208 02:17:12.717000 14832 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 17344 closing signal SIGTERM"
_FORCED = {
    "numbers": "W1208 02:17:42.718000 14832 torch/distributed/elastic/multiprocessing/api.py:1047] "
               "Unable to shutdown process 17344 via 15, forcefully exiting via 9",
    "enum names": "W0501 22:05:18.361000 1396 torch/distributed/elastic/multiprocessing/api.py:923] "
                  "Unable to shutdown process 17344 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL",
}


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


@pytest.mark.parametrize("forced", list(_FORCED.values()), ids=list(_FORCED))
def test_the_launchers_forced_sigkill_is_not_the_cause(tmp_path: Path, forced: str) -> None:
    root, rank = _diagnose(tmp_path, _STEPS + _TIMEOUTS + [_SIGTERM, forced, *_REPORT])
    assert (root, rank) == ("gloo-collective-timeout", 1)


def test_a_sigkill_the_launcher_did_not_send_stays_a_signal(tmp_path: Path) -> None:
    root, _ = _diagnose(tmp_path, _STEPS + [_SIGTERM, *_REPORT])
    assert root == "worker-killed-by-signal"
