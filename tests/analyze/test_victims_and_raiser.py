"""Ranks that report a peer's death (gloo's `Connection closed by peer`) are victims: when another rank
raised an exception no class explains, that rank started it, and the victims' class is not the answer."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.torchrun_report import failure_report as _report
from traintriage.pipeline import diagnose


def _victim(rank: int) -> list[str]:
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/srv/job/train.py", line 290, in <module>',
        f"[rank{rank}]:     dist.barrier()",
        f'[rank{rank}]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 5356, '
        "in barrier",
        f"[rank{rank}]:     work.wait()",
        f"[rank{rank}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        f"[127.0.0.1]:2291{rank}. This is typically caused by a remote worker crashing. Check the logs of the remote "
        "worker before reporting an error.",
    ]


RAISER = [
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "/srv/job/train.py", line 175, in save_ckpt',
    "[rank0]:     os.rename(tmp, final)",
    "[rank0]: OSError: [Errno 18] Invalid cross-device link: '/dev/shm/step250.pt.tmp' -> '/ckpt/step250.pt'",
]


def test_another_ranks_own_exception_outranks_the_victims_class(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(RAISER + _victim(1) + _victim(2)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"
    assert diagnosis.initiating_rank == 0


def test_without_a_raiser_the_victims_class_is_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(_victim(1) + _victim(2)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "gloo-connection-closed"


def test_a_peer_killed_by_a_signal_no_class_names_outranks_the_victims_class(tmp_path: Path) -> None:
    """Rank 1 hit its CPU-time limit (SIGXCPU): rank 0's lost connection is its victim, not the cause."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(_victim(0) + _report(1, -24, "SIGXCPU")) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"
    assert diagnosis.initiating_rank == 1



def _exit_report(rank: int, exitcode: int) -> list[str]:
    """torchrun's report of a rank that exited with an error status of its own (no signal, no traceback)."""
    return _report(rank, -1, "")[:9] + [f"  exitcode  : {exitcode} (pid: 17344)", "  error_file: <N/A>",
                                          "  traceback : To enable traceback see: "
                                          "https://pytorch.org/docs/stable/elastic/errors.html",
                                          "============================================================"]


def test_a_peer_that_exited_with_an_error_status_outranks_the_victims_class(tmp_path: Path) -> None:
    """Rank 1 called sys.exit(3) and printed nothing: its peers' lost connections are not the cause."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(_victim(0) + _victim(2) + _exit_report(1, 3)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"
    assert diagnosis.initiating_rank == 1


def _step(rank: int, step: int) -> str:
    return f"[rank{rank}] step {step} loss 0.69{rank} lr 0.1"


def test_the_one_peer_that_left_without_an_error_started_it(tmp_path: Path) -> None:
    """Rank 2 ran out of its shard and returned from the loop (exit 0): ranks 0 and 1 lost their connection."""
    path = tmp_path / "train.log"
    lines = [_step(r, s) for s in (10, 20) for r in range(3)] + _victim(0) + _victim(1)
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"
    assert diagnosis.initiating_rank == 2


def test_torchruns_report_of_the_victim_does_not_hide_the_silent_peer(tmp_path: Path) -> None:
    """Rank 0 saved and exited on a signal of its own; torchrun reports rank 1, the victim, as the first failure.
    The console is saved under a name that gives its untagged lines (the launcher's) to rank 0."""
    path = tmp_path / "job-rank0.log"
    agent = ("E1206 15:54:41.908000 11578 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
             "local_rank: 1 (pid: 11593) of binary: /opt/venv/bin/python3")
    lines = [_step(r, s) for s in (10, 20) for r in range(2)] + _victim(1) + [agent] + _exit_report(1, 1)
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"
    assert diagnosis.initiating_rank == 0


def test_with_two_quiet_peers_the_victims_class_stands(tmp_path: Path) -> None:
    """Two seen ranks besides the victim: which one left is not known, so the victims' class stands."""
    path = tmp_path / "train.log"
    lines = [_step(r, 10) for r in range(3)] + _victim(0)
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "gloo-connection-closed"


def _unprefixed(lines: list[str]) -> list[str]:
    """The lines as a formatter prints them that names the rank only on its own header line."""
    return [line.split(": ", 1)[1] if line.startswith("[rank") else line for line in lines]


def test_without_rank_tags_an_unexplained_exception_printed_before_the_victim_started_it(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(["2026-12-06 12:30:06.780 | ERROR | rank=0 | train:run:131 - rank 0 failed"]
                              + _unprefixed(RAISER)
                              + ["2026-12-06 12:30:07.837 | ERROR | rank=1 | train:run:131 - rank 1 failed"]
                              + _unprefixed(_victim(1))) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is None or diagnosis.root_cause.id != "gloo-connection-closed"


def test_without_rank_tags_an_exception_after_the_victims_report_does_not_displace_it(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(_unprefixed(_victim(1)) + _unprefixed(RAISER)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "gloo-connection-closed"
