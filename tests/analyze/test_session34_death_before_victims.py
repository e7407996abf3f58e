"""A process's death reported above its peers' lost connections is what they waited on."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of
from traintriage.pipeline import diagnose

STEPS = [f"(RayTrainWorker pid=4411) step {n} loss {2.3 - n / 100:.3f}" for n in range(4)]
DIED = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker. Worker ID: 9cb9cc0259 Worker IP address: 10.0.3.7")
RESET = [
    "(RayTrainWorker pid=4412) Error in training function:",
    "(RayTrainWorker pid=4412) Traceback (most recent call last):",
    '(RayTrainWorker pid=4412)   File "/srv/job/train.py", line 88, in train_loop',
    "(RayTrainWorker pid=4412)     loss.backward()",
    "(RayTrainWorker pid=4412) RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
    "[10.0.3.7]:41021: Connection reset by peer",
]


def test_a_worker_death_above_the_survivors_connection_resets_is_the_cause(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(STEPS + [DIED] + RESET) + "\n") == "worker-killed-by-signal"


def test_a_death_reported_after_the_resets_does_not_take_their_place(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(STEPS + RESET + [DIED]) + "\n") == "gloo-connection-closed"


TUNE_SUMMARY = [
    "2026-12-03 10:02:11,240\tERROR tune_controller.py:1331 -- Trial task failed for trial objective_7c1e2_00002",
    "Traceback (most recent call last):",
    '  File "/srv/hpo/search.py", line 41, in objective',
    "    out = model(batch)",
    "ValueError: hidden size 100 is not a multiple of the number of heads 8",
    "Trial objective_7c1e2_00002 errored after 0 iterations at 2026-12-03 10:02:11. Total running time: 9s",
    "2026-12-03 10:02:15,002\tERROR tune.py:1035 -- Trials did not complete: [objective_7c1e2_00002]",
    "best trial config: {'lr': 0.001, 'heads': 4} loss: 0.4120",
]


def test_ray_tune_trials_that_did_not_complete_are_a_failure_though_the_best_trial_follows(tmp_path: Path) -> None:
    path = tmp_path / "tune.log"
    path.write_text("\n".join(TUNE_SUMMARY) + "\n")
    assert root_of(tmp_path, "\n".join(TUNE_SUMMARY) + "\n") == "user-code-exception"  # raised in the objective
    path.write_text("\n".join(line for line in TUNE_SUMMARY if "Trials did not complete" not in line) + "\n")
    assert diagnose([str(path)]).status == "no-failure"  # the trial's error was caught and the search went on
