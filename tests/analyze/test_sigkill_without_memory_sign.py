"""A SIGKILL that only a launcher reports names a worker killed by a signal, with the OOM killer as the
first alternative; a line of memory pressure beside it (the kernel's, a scheduler's, a shell's `Killed`)
keeps it the OOM killer's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analyze.torchrun_report import failure_report
from traintriage.pipeline import diagnose

_STEPS = [f"[rank{rank}]: epoch 0 step {step} loss {2.5 - step / 10:.3f}" for step in range(1, 6) for rank in (0, 1)]
_TORCHRUN_KILL = [
    "W1207 10:02:11.031000 7712 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 7790 closing signal SIGTERM",
    "E1207 10:02:11.352000 7712 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) local_rank: 1 (pid: 7791) of binary: /usr/bin/python3",
    *failure_report(1, -9, "SIGKILL"),
]
_SPAWN_KILL = [
    "Traceback (most recent call last):",
    '  File "/home/u/train.py", line 88, in <module>',
    "    mp.spawn(worker, args=(2,), nprocs=2)",
    "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
]
_KERNEL_OOM = "[Mon Dec  7 10:02:11 2026] Out of memory: Killed process 7791 (python3) total-vm:98765432kB, anon-rss:61234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:123456kB oom_score_adj:0"


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, list[str]]:
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), [c.id for c in diagnosis.candidates]


@pytest.mark.parametrize("kill", [_TORCHRUN_KILL, _SPAWN_KILL], ids=["torchrun", "mp.spawn"])
def test_a_launchers_sigkill_alone_is_a_signal_with_the_oom_killer_next(tmp_path: Path, kill: list[str]) -> None:
    root, candidates = _diagnose(tmp_path, _STEPS + kill)
    assert root == "worker-killed-by-signal"
    assert candidates[:2] == ["worker-killed-by-signal", "host-oom-killed"]


def test_the_kernels_oom_report_keeps_the_oom_killer(tmp_path: Path) -> None:
    root, _ = _diagnose(tmp_path, _STEPS + [_KERNEL_OOM] + _TORCHRUN_KILL)
    assert root == "host-oom-killed"


def test_the_jobs_own_rss_figures_make_it_the_oom_killer(tmp_path: Path) -> None:
    growing = [f"[rank1]: step {step} loss 2.10 rss={400 + 150 * step}MB" for step in range(1, 6)]
    root, candidates = _diagnose(tmp_path, _STEPS + growing + _TORCHRUN_KILL)
    assert root == "host-oom-killed"
    assert "worker-killed-by-signal" not in candidates[:1]


def test_a_shells_killed_line_stays_the_oom_killers(tmp_path: Path) -> None:
    root, _ = _diagnose(tmp_path, _STEPS + ["./train.sh: line 12: 48211 Killed                  python train.py --bs 64"])
    assert root == "host-oom-killed"


def test_a_segfault_is_unchanged(tmp_path: Path) -> None:
    segv = [line.replace("-9", "-11") for line in _TORCHRUN_KILL[:2]] + failure_report(1, -11, "SIGSEGV")
    root, candidates = _diagnose(tmp_path, _STEPS + segv)
    assert root == "worker-killed-by-signal"
    assert "host-oom-killed" not in candidates
