"""A hang by timestamps: the pause after the last step is compared with one process's step
time, not with the microseconds between ranks that log the same step."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def _ranks_stepping(step_seconds: int, steps: int, ranks: int) -> list[str]:
    return [f"[default{r}]:2026-12-03 10:{(step_seconds * s) // 60:02d}:{(step_seconds * s) % 60:02d},{100 + r:03d} "
            f"[rank{r}] INFO train: step {s} loss {2.5 - 0.01 * s:.3f}" for s in range(1, steps + 1) for r in range(ranks)]


def _error_after(seconds_after: int, last: int) -> list[str]:
    at = last + seconds_after
    return [f"[default1]:2026-12-03 10:{at // 60:02d}:{at % 60:02d},000 [rank1] ERROR train: evaluation failed",
            "[default1]:Traceback (most recent call last):",
            '[default1]:  File "/home/alice/proj/train.py", line 90, in <module>',
            "[default1]:    evaluate(model)",
            "[default1]:ValueError: could not convert string to float: 'n/a'"]


def test_a_pause_shorter_than_many_steps_is_not_a_hang(tmp_path: Path) -> None:
    """Three ranks step every 5 s; an error 55 s after the last step is not progress stopping."""
    path = tmp_path / "run.log"
    path.write_text("\n".join(_ranks_stepping(5, 8, 3) + _error_after(55, 40)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id != "training-hang"
    assert diagnosis.initiating_rank == 1


def test_a_pause_of_many_steps_is_still_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    lines = _ranks_stepping(1, 30, 3)
    lines.append("[default0]:2026-12-03 10:09:00,000 [rank0] WARNING train: still waiting for rank 2")
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "training-hang"
