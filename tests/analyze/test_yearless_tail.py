"""Steps logged with full dates, then torchrun's glog lines, which carry no year: the pause between them is
measured in one year, so a stall ended by a wall-time limit's SIGTERM reads as the hang it is."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from traintriage.analyze.timing import in_year_of
from traintriage.pipeline import diagnose


def _stalled_run(pause_seconds: int) -> str:
    steps = [f"2026-03-14 09:20:{10 + s:02d},{100 + s:03d} INFO train: step {s} | loss {3.1 - 0.1 * s:.2f}"
             for s in range(12)]
    end = 21 + pause_seconds
    stop = f"W0314 09:{20 + end // 60:02d}:{end % 60:02d}.412000 5120 torch/distributed/elastic/agent/server/api.py:753]"
    return "\n".join([
        *steps,
        f"{stop} Received 15 death signal, shutting down workers",
        f"{stop.replace('api.py:753', 'api.py:1028')} Sending process 5124 closing signal SIGTERM",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 5120 got signal: 15",
    ]) + "\n"


def test_a_long_silence_before_the_stop_signal_is_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(_stalled_run(pause_seconds=240))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "training-hang"


def test_a_stop_right_after_the_last_step_is_no_hang(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(_stalled_run(pause_seconds=1))
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "training-hang"


def test_a_yearless_stamp_takes_the_nearer_year_across_new_year() -> None:
    reference = datetime(2027, 1, 1, 0, 0, 5, tzinfo=timezone.utc).timestamp()
    late_december = datetime(1970, 12, 31, 23, 59, 50, tzinfo=timezone.utc).timestamp()
    assert datetime.fromtimestamp(in_year_of(late_december, reference), timezone.utc).year == 2026
    early_january = datetime(1970, 1, 1, 0, 1, 0, tzinfo=timezone.utc).timestamp()
    assert in_year_of(early_january, reference) - reference == 55
