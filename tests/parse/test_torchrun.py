"""torchrun's `Root Cause (first observed failure)` block, as torch.distributed.elastic prints it."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from traintriage.parse.torchrun import parse_root_cause, sigkilled_pid

REPORT = """[0]:
  time      : 2024-05-01_10:02:11
  host      : node7
  rank      : 3 (local_rank: 3)
  exitcode  : -11 (pid: 4412)
  error_file: <N/A>
  traceback : Signal 11 (SIGSEGV) received by PID 4412
============================================================""".splitlines()


def test_report_fields() -> None:
    report = parse_root_cause(REPORT)
    assert report is not None
    assert (report.rank, report.local_rank, report.host, report.exitcode) == (3, 3, "node7", -11)
    assert report.time is not None and report.time.hour == 10
    assert report.has_error_file is False


def test_report_without_rank_is_ignored() -> None:
    assert parse_root_cause(["[0]:", "  time      : 2024-05-01_10:02:11"]) is None


def test_report_behind_host_and_launcher_prefixes_gives_the_global_rank() -> None:
    """pdsh puts the host before every line of the agent's report; `local_rank` is not the rank."""
    lines = ["gpu-node-3: [0]:", "gpu-node-3:   time      : 2026-12-03_07:12:40", "gpu-node-3:   host      : gpu-node-3",
             "gpu-node-3:   rank      : 19 (local_rank: 3)", "gpu-node-3:   exitcode  : 1 (pid: 4412)",
             "gpu-node-3:   error_file: <N/A>"]
    report = parse_root_cause(lines)
    assert report is not None
    assert (report.rank, report.local_rank, report.exitcode) == (19, 3, 1)


@pytest.mark.parametrize(("stamp", "expected"), [
    ("2024-05-01_10:02:11", datetime(2024, 5, 1, 10, 2, 11, tzinfo=timezone.utc)),
    ("2024-13-01_10:02:11", None),  # no 13th month
    ("2024-05-01 10:02:11", None),  # not the report's form
    ("", None),
])
def test_report_time_is_read_as_utc(stamp: str, expected: datetime | None) -> None:
    report = parse_root_cause(["[0]:", f"  time      : {stamp}", "  rank      : 3 (local_rank: 3)"])
    assert report is not None and report.time == expected


def test_a_report_pasted_through_markdown_keeps_its_rank() -> None:
    """Markdown drops `_` pairs and sometimes the breaks between fields; the rank survives."""
    lines = ["[0]:", "2025-03-14 01:45:50", "rank5 (local rank: 1)exitcode: -9 (pid: 36071)error file: <N/A>",
             "traceback : signal 9 (SIGKILL) received by PID 36071"]
    report = parse_root_cause(lines)
    assert report is not None
    assert (report.rank, report.local_rank) == (5, 1)


@pytest.mark.parametrize(
    ("message", "pid"),
    [
        ("exitcode  : -9 (pid: 17344)", "17344"),
        ("traceback : Signal 9 (SIGKILL) received by PID 17344", "17344"),
        ("exitcode  : 1 (pid: 17343)", None),
        ("traceback : Signal 15 (SIGTERM) received by PID 17345", None),
        ("RuntimeError: exitcode  : -9 (pid: 17344)", None),
    ],
)
def test_the_pid_a_report_field_says_died_of_sigkill(message: str, pid: str | None) -> None:
    assert sigkilled_pid(message) == pid
