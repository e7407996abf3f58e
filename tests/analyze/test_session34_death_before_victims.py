"""A process's death reported above its peers' lost connections is what they waited on."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

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
