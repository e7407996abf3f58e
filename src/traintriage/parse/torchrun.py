"""torchrun's failure report: the `Root Cause (first observed failure)` block.

    Root Cause (first observed failure):
    [0]:
      time      : 2024-05-01_10:02:11
      host      : node7
      rank      : 3 (local_rank: 3)
      exitcode  : 1 (pid: 4412)
      error_file: /tmp/torchelastic_x/none_y/attempt_0/3/error.json
      traceback : Traceback (most recent call last): ...

It only sees its own node's workers, and without an error file its time is the
agent's detection time, so the analysis weighs it against the workers' own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from traintriage.parse.prefix import parse_prefix

_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s*(.*)$")
_RANK = re.compile(r"(-?\d+)(?: \(local_rank: (\d+)\))?")
_MANGLED_RANK = re.compile(r"\s*rank\s*:?\s*(\d+) \(local[_ ]rank: (\d+)\)")
_EXIT = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")
_SIGKILL_TRACEBACK = re.compile(r"Signal 9 \(SIGKILL\) received by PID (\d+)")
_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)_(\d\d):(\d\d):(\d\d)")
"""The report's `time : 2024-05-01_09:13:07` (torchrun's `%Y-%m-%d_%H:%M:%S`, UTC); read without
`strptime`, whose first call imports `_strptime` and `locale` (a twentieth of a small diagnosis)."""


def is_report_field(message: str) -> bool:
    """A `field : value` line of the report (`exitcode  : -9 (pid: 7)`), whatever precedes it."""
    return _FIELD.match(_unmangled(message)) is not None


def sigkilled_pid(message: str) -> str | None:
    """The worker a report field says died of SIGKILL (`exitcode  : -9 (pid: 7)`, `traceback : Signal 9
    (SIGKILL) received by PID 7`), as its pid; None for any other line."""
    match = _FIELD.match(_unmangled(message))
    if match is None:
        return None
    name, value = match.group(1), match.group(2)
    if name == "exitcode":
        code = _EXIT.match(value)
        return code.group(2) if code and code.group(1) == "-9" else None
    killed = _SIGKILL_TRACEBACK.match(value) if name == "traceback" else None
    return killed.group(1) if killed else None


@dataclass(frozen=True)
class FailureReport:
    rank: int | None
    local_rank: int | None
    host: str | None
    exitcode: int | None
    time: datetime | None
    error_file: str | None
    traceback: str | None
    has_error_file: bool


def parse_root_cause(after: list[str]) -> FailureReport | None:
    fields: dict[str, str] = {}
    for text in after[:12]:
        body = _unmangled(parse_prefix(text).message)  # a host, line number or launcher tag may precede the field
        match = _FIELD.match(body)
        if match and match.group(1) not in fields:
            fields[match.group(1)] = match.group(2).strip()
        elif fields and body.strip().startswith("====="):
            break
    if "rank" not in fields:
        return None
    rank_match = _RANK.match(fields["rank"])
    exit_match = _EXIT.match(fields.get("exitcode", ""))
    stamp = _report_time(fields.get("time", ""))
    error_file = fields.get("error_file")
    return FailureReport(
        rank=int(rank_match.group(1)) if rank_match else None,
        local_rank=int(rank_match.group(2)) if rank_match and rank_match.group(2) else None,
        host=fields.get("host"),
        exitcode=int(exit_match.group(1)) if exit_match else None,
        time=stamp,
        error_file=error_file,
        traceback=fields.get("traceback"),
        has_error_file=bool(error_file) and error_file != "<N/A>",
    )


def _unmangled(body: str) -> str:
    """The rank field of a report pasted through a Markdown renderer, which drops `_` pairs and
    sometimes the line break and colon between fields: `rank2 (local rank: 2)exitcode: -9`."""
    match = _MANGLED_RANK.match(body)
    return f"rank : {match.group(1)} (local_rank: {match.group(2)})" if match else body


def _report_time(text: str) -> datetime | None:
    match = _TIME.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups())
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        return None
