"""A Slurm step cancelled right after one of its tasks failed was cancelled because of that task
(srun kills the step on a bad exit); a step cancelled from outside is the signal's doing."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_TASK_FAILED = "srun: error: gpu-a03: task 6: Exited with exit code 1"
_CANCELLED = "slurmstepd: error: *** STEP 981234.0 ON gpu-a03 CANCELLED AT 2026-11-30T21:04:55 ***"
_KILLED = ["srun: error: gpu-a03: tasks 0-5,7: Killed", "srun: error: gpu-a04: tasks 8-15: Killed",
           "srun: Force Terminated StepId=981234.0"]


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "slurm-981234.out"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_a_task_failure_before_the_cancel_is_the_cause(tmp_path: Path) -> None:
    lines = [_TASK_FAILED, "srun: launch/slurm: _step_signal: Terminating StepId=981234.0", _CANCELLED, *_KILLED]
    assert _diagnose(tmp_path, lines) == ("slurm-srun-task-exited", 6)


def test_a_cancel_before_any_task_failure_is_the_signal(tmp_path: Path) -> None:
    lines = [_CANCELLED, *_KILLED, _TASK_FAILED]
    root, _ = _diagnose(tmp_path, lines)
    assert root == "launcher-signal-received"
