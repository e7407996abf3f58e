"""Failure evidence in forms a log prints without a known class, and the exception a run went on from."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of
from traintriage.pipeline import diagnose

USAGE = [
    "usage: pretrain [-h] [--lr LR] [--steps STEPS]",
    "pretrain: error: unrecognized arguments: --local-rank=1",
    "E1206 17:14:35.034000 22937 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) "
    "local_rank: 1 (pid: 22958) of binary: /usr/bin/python3",
]


def test_argparse_error_under_a_prog_name_is_the_failure_not_the_launchers_report(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(USAGE) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status == "unknown-failure" and diagnosis.root_cause is None


def _store_wait(tail: str) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/srv/job/train.py", line 60, in init_distributed',
        "    dist.init_process_group(backend='gloo')",
        '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2169, in '
        "_new_process_group_helper",
        "    backend_class = ProcessGroupGloo(",
        tail,
    ]


ENFORCE = "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/context.cc:23] rank < size. 3 vs 3"
WAIT = "torch.distributed.DistStoreError: wait timeout after 20000ms, keys: /default_pg/0//cpu//0/1"


def test_a_peer_that_raised_before_joining_the_store_is_the_failure(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(_store_wait(ENFORCE) + _store_wait(WAIT)) + "\n") is None


def test_a_store_wait_alone_is_a_rendezvous_timeout(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(_store_wait(WAIT)) + "\n") == "rendezvous-timeout"


def _steps(first: int, count: int) -> list[str]:
    return [f"2026-12-06 17:40:{40 + n:02d},080 INFO [rank0] train: step {first + n} | loss 6.3{n} | lr 3.00e-03"
            for n in range(count)]


HELPER_FAILED = [
    "2026-12-06 17:40:38,264 WARNING [rank0] train: telemetry helper exited with status 1:",
    "Traceback (most recent call last):",
    '  File "<string>", line 1, in <module>',
    "ModuleNotFoundError: No module named 'pynvml'",
]
AGENT_SIGNALLED = [
    "W1206 17:40:45.170000 13574 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
    "shutting down workers",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 13574 got signal: 15",
]


def test_a_caught_exception_the_run_trained_on_from_is_no_cause_of_a_later_failure(tmp_path: Path) -> None:
    text = "\n".join(_steps(0, 2) + HELPER_FAILED + _steps(2, 6) + AGENT_SIGNALLED) + "\n"
    assert root_of(tmp_path, text) == "launcher-signal-received"


def test_one_step_after_a_caught_exception_does_not_excuse_it_when_the_run_failed(tmp_path: Path) -> None:
    text = "\n".join(_steps(0, 2) + HELPER_FAILED + _steps(2, 1) + AGENT_SIGNALLED) + "\n"
    assert root_of(tmp_path, text) == "python-package-missing"
