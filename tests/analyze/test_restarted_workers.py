"""torchrun `--max-restarts`: a worker's failure, then the agent's restart, more steps and the end of
training is a run that recovered; the same failure with nothing after the restart is not."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of
from traintriage.pipeline import diagnose

FIRST_ATTEMPT = [
    "initialized rank 1/2 backend=gloo",
    "[rank1]: Traceback (most recent call last):",
    '[rank1]:   File "/srv/job/train.py", line 68, in <module>',
    "[rank1]:     data = torch.load(shard_path)",
    "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/shard-00001.pt'",
    "E1205 22:39:02.749000 22069 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
    "local_rank: 1 (pid: 22217) of binary: /opt/venv/bin/python3",
]
SECOND_ATTEMPT = ["initialized rank 1/2 backend=gloo"] + [
    f"[rank1] step {n} | loss {2.0 - 0.1 * n:.2f}" for n in range(1, 6)]
FINISHED = ["training finished, saved final.pt"]


def _status(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).status.value


def test_a_restart_that_trains_and_finishes_recovered(tmp_path: Path) -> None:
    assert _status(tmp_path, FIRST_ATTEMPT + SECOND_ATTEMPT + FINISHED) == "no-failure"


def test_a_restart_that_never_finishes_did_not(tmp_path: Path) -> None:
    assert _status(tmp_path, FIRST_ATTEMPT + SECOND_ATTEMPT) != "no-failure"


def test_finishing_without_steps_after_the_restart_does_not_excuse_the_failure(tmp_path: Path) -> None:
    assert _status(tmp_path, FIRST_ATTEMPT + FINISHED) != "no-failure"


KILLED_ATTEMPT = [
    "initialized rank 1/2 backend=gloo",
    "[rank1] step 3 | loss 1.70",
    "W1205 22:39:02.612000 22069 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 22216 "
    "closing signal SIGTERM",
    "E1205 22:39:02.749000 22069 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
    "local_rank: 1 (pid: 22217) of binary: /opt/venv/bin/python3",
]


def test_a_worker_killed_without_output_then_restarted_recovered(tmp_path: Path) -> None:
    """The agent's report of the killed worker is the only line of its failure, and the restart's own marker."""
    assert _status(tmp_path, KILLED_ATTEMPT + SECOND_ATTEMPT + FINISHED) == "no-failure"
    assert _status(tmp_path, KILLED_ATTEMPT + SECOND_ATTEMPT) != "no-failure"


def _refused_restart(agent_pid: int) -> list[str]:
    """The restarted attempt cannot rebuild its Gloo mesh (a peer of the old attempt is gone) and fails."""
    return [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/job/train.py", line 40, in <module>',
        '[rank0]:     dist.init_process_group("gloo")',
        "[rank0]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:152] "
        "timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:65447$0",
        f"E1205 22:39:09.101000 {agent_pid} torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
        "local_rank: 0 (pid: 22301) of binary: /opt/venv/bin/python3",
    ]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    return root_of(tmp_path, "\n".join(lines) + "\n")


SEGV_ATTEMPT = [
    "[rank0] step 3 | loss 1.70",
    "E1205 22:39:02.749000 22069 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -11) "
    "local_rank: 1 (pid: 22217) of binary: /opt/venv/bin/python3",
]


def test_a_failed_restart_does_not_displace_the_first_attempts_failure(tmp_path: Path) -> None:
    """Rank 1 segfaulted; the restart's refused connections only followed from it."""
    assert _root(tmp_path, SEGV_ATTEMPT + _refused_restart(22069)) == "worker-killed-by-signal"


def test_another_agents_failure_is_no_later_attempt(tmp_path: Path) -> None:
    """Two nodes' agents in one console: the second agent's failure is its own, not a restart of the first."""
    assert _root(tmp_path, SEGV_ATTEMPT + _refused_restart(31337)) != "worker-killed-by-signal"
