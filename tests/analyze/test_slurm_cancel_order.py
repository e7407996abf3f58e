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


def test_slurmstepds_oom_line_under_an_srun_label_names_no_task(tmp_path: Path) -> None:
    """With `srun --label`, slurmstepd's step-wide OOM notice arrives under some task's `N:` label;
    the task the OOM killer hit is the one srun names."""
    lines = [
        "0: iteration 1/ 100 | lm loss: 9.81E+00 |",
        "3: iteration 1/ 100 | lm loss: 9.81E+00 |",
        "0: slurmstepd: error: Detected 1 oom_kill event in StepId=5521.0. Some of the step tasks have been OOM Killed.",
        "srun: error: nid001234: task 3: Out Of Memory",
        "srun: Terminating StepId=5521.0",
    ]
    root, rank = _diagnose(tmp_path, lines)
    assert (root, rank) == ("host-oom-killed", 3)
