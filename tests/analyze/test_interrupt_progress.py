"""torchrun's agent receiving SIGINT: a Ctrl-C that stopped a run while it trained is the user's interrupt;
the same signal with no training step logged before it (a job that never trained, or hung, and was stopped)
is the launcher's signal."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

AGENT_SIGINT = [
    "W0412 17:20:44.118000 90211 torch/distributed/elastic/agent/server/api.py:719] Received 2 death signal, "
    "shutting down workers",
    "W0412 17:20:44.119000 90211 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 90245 "
    "closing signal SIGINT",
    "Traceback (most recent call last):",
    '  File "/opt/venv/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 90211 got signal: 2",
]


def _root(tmp_path: Path, lines: list[str]) -> str | None:
    return root_of(tmp_path, "\n".join(lines) + "\n")


def test_a_ctrl_c_during_training_is_the_users_interrupt(tmp_path: Path) -> None:
    steps = [f"[rank0] step {n} loss {2.0 - 0.01 * n:.3f} lr 3.0e-04" for n in range(10, 60, 10)]
    assert _root(tmp_path, steps + AGENT_SIGINT) == "user-interrupt"


def test_a_ctrl_c_before_any_training_step_is_the_launchers_signal(tmp_path: Path) -> None:
    waiting = ["[rank0] loading shards from /data/shards", "[rank1] loading shards from /data/shards"]
    assert _root(tmp_path, waiting + AGENT_SIGINT) == "launcher-signal-received"
