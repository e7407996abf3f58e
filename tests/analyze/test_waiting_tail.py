"""A hang read from the logs' tails: the run made progress, then every source's last lines
only wait (watchdog, timeout, stack dumps). Counted per line, across all sources."""

from __future__ import annotations

from traintriage.analyze import timing
from traintriage.match.scan import SourceScan
from traintriage.parse.metrics import MetricPoint

PROGRESS = [MetricPoint(source=0, line=step, rank=0, step=step, loss=2.0) for step in range(10)]
WAITING = [
    "[rank1]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout",
    'Thread 0x00007f3a (most recent call first):',
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait",
    "Dumping traces of all threads on SIGTERM",
]
TRAINING = ["step 9 | loss 2.01 | lr 3e-4", "step 10 | loss 2.00 | lr 3e-4", "saving checkpoint to out/ckpt-10"]


def _scans(*tails: list[str]) -> list[SourceScan]:
    return [SourceScan(source=index, tail=tail) for index, tail in enumerate(tails)]


def test_tails_that_only_wait_after_progress_are_a_hang() -> None:
    detail = timing._stalled_after_progress(_scans(WAITING, WAITING[:2] + TRAINING[:1]), PROGRESS)
    assert detail is not None and "only watchdog" in detail


def test_tails_still_training_are_not_a_hang() -> None:
    assert timing._stalled_after_progress(_scans(TRAINING, WAITING[:1] + TRAINING), PROGRESS) is None


def test_a_fleet_of_quiet_tails_outweighs_a_few_waiting_ones() -> None:
    scans = _scans(WAITING, *([TRAINING] * 500))
    assert timing._stalled_after_progress(scans, PROGRESS) is None


def test_a_waiting_word_is_found_in_any_case_and_only_within_a_line() -> None:
    assert timing._waiting_lines(["NCCL WATCHDOG timeout", "ok", "Timed Out waiting"]) == 2
    assert timing._waiting_lines(["the run took too long: time", "out of memory"]) == 0
