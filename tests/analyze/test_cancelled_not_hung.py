"""A job cancelled from outside after steady progress: its tail is the teardown the signal set off
(`Main process received SIGTERM, exiting`, `Killing subprocess N`), which says nothing about whether
training had stopped. Only lines that wait (watchdog, timeout, stack dumps) make a tail look hung."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def _steps() -> list[str]:
    return [f" iteration {10 * s:8d}/    1000 | lm loss: {9 - s / 10:.6E} | grad norm: 5.{s} |" for s in range(1, 9)]


def _teardown() -> list[str]:
    lines = ["srun: Job step aborted: Waiting up to 62 seconds for job step to finish.",
             "slurmstepd: error: *** STEP 4411.0 ON gpu-node7 CANCELLED AT 2026-11-02T09:02:07 ***"]
    for node in range(12):  # one launcher per node, each killing its workers
        lines += [f"Killing subprocess {7000 + 8 * node}", "Main process received SIGTERM, exiting"]
    return lines


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    path = tmp_path / "job.out"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return diagnosis.root_cause.id if diagnosis.root_cause else None


def test_a_cancelled_job_whose_tail_is_teardown_is_not_a_hang(tmp_path: Path) -> None:
    assert _root(tmp_path, _steps() + _teardown()) == "launcher-signal-received"


def test_a_tail_that_only_waits_after_the_last_step_is_still_a_hang(tmp_path: Path) -> None:
    waits = [f"WARNING data.py:57 still waiting for shard 17 after {60 * n}s" for n in range(1, 11)]
    assert _root(tmp_path, _steps() + waits) == "training-hang"
