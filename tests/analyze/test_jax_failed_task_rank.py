"""JAX's coordination service names the task that stopped sending heartbeats: that process index is the
rank that failed first, in the current wording and in the older `/job:jax_worker/...` one."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

_STEPS = [f"step {step} loss {2.3 - step / 100:.4f}" for step in range(1, 12)]
_CURRENT = [
    "E1207 19:11:53.244972   24786 coordination_service.cc:1549] [11266843939797303900] Use error polling to "
    "propagate the following error to all tasks: UNAVAILABLE: Task 2 heartbeat timeout. This indicates that the remote "
    "task has failed, got preempted, or crashed unexpectedly. Check the task logs for an earlier error to debug further.",
    "F1207 19:11:53.245538   24790 client.h:80] Terminating process because the JAX distributed service detected "
    "fatal errors. This most likely indicates that another task died; see the other task logs for more details.",
]
_OLDER = [
    "2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/coordination_service.cc:1170] "
    "/job:jax_worker/replica:0/task:2 has been set to ERROR in coordination service: UNAVAILABLE: Task "
    "/job:jax_worker/replica:0/task:2 heartbeat timeout. This indicates that the remote task has failed, got "
    "preempted, or crashed unexpectedly.",
]


@pytest.mark.parametrize("report", [_CURRENT, _OLDER], ids=["current", "older"])
def test_the_task_that_stopped_heartbeats_is_the_first_rank(tmp_path: Path, report: list[str]) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(_STEPS + report) + "\n")
    assert diagnose([str(path)]).initiating_rank == 2
