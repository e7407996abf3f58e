"""Read the rank, host and time that launchers and loggers put in front of a line.

Prefixes stack in any order (`10.0.0.7: [default3]:[rank11]: 2024-05-01 10:02:11,123
[ERROR] ...`), so they are peeled one at a time from the left; the rank comes from the
innermost prefix that names one (an outer `[default3]` is torchrun's *local* rank, an
inner `[rank11]` the global one).

Linear by construction: every pattern runs anchored on a bounded slice of the line
(`HEAD` characters from the current position), so a 4000-character line of host-like
tokens costs the same as a short one; only the final message is a slice of the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import Enum

HEAD = 200
"""Characters looked at per peel: prefixes are short, and a longer token is not one."""
MAX_PEELS = 8
_NCCL_WINDOW = 160


class _Kind(Enum):
    rank = "rank"
    host = "host"
    skip = "skip"  # line numbers, log levels: peeled, carry nothing we keep


# Anchored, applied with .match on the bounded head; none has nested quantifiers.
_PEELERS: tuple[tuple[_Kind, re.Pattern[str]], ...] = (
    (_Kind.rank, re.compile(r"\[(?:default|worker|trainer)(\d{1,6})\]:\s?")),  # torchrun --tee: role + local rank
    (_Kind.rank, re.compile(r"\[(?i:rank)[ _-]?(\d{1,6})\]:?\s?")),  # [rank3]: (PyTorch), [RANK 1] (loggers)
    (_Kind.rank, re.compile(r"\[\d{1,9},(\d{1,6})\]<std(?:out|err|diag)>:\s?")),  # mpirun --tag-output
    (_Kind.rank, re.compile(r"\[(\d{1,6})\]<std(?:out|err)>:\s?")),  # horovodrun
    (_Kind.rank, re.compile(r"(\d{1,5}): (?=\S)")),  # srun --label
    (_Kind.rank, re.compile(r"\[PG [^\]]{0,80}Rank (\d{1,6})\]\s?")),  # ProcessGroupNCCL messages
    (_Kind.rank, re.compile(r"\((?:VllmWorker|RayWorkerWrapper)(?: rank=| TP)(\d{1,5})[^)]{0,60}\)\s?")),  # vLLM workers
    (_Kind.skip, re.compile(r"\(EngineCore[^)]{0,60}\)\s?")),  # vLLM's engine process
    (_Kind.host, re.compile(r"\[pod/([\w.-]{1,120})/[\w.-]{1,80}\]\s?")),  # kubectl logs --prefix
    (_Kind.host, re.compile(r"(<[A-Z][A-Z_]{1,15}(?:-\d{1,9})?>): ")),  # a host or address masked at ingest
    (_Kind.skip, re.compile(r"\d{1,7}(?:\t|\s{1,8}(?=\[))")),  # line numbers: `   2 [rank0]: ...`, `12\t...`
    (_Kind.skip, re.compile(r"\[\d{1,7}\] (?=\S)")),  # line numbers in brackets: `[1743] ...`
    (_Kind.skip, re.compile(r"\[(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]:?\s?")),  # log level
    (_Kind.skip, re.compile(r"[|>] (?=\S)")),  # a log pasted as a quote or inside a table
)
# A host or IP address then ': ' (pdsh, DeepSpeed's multi-node runner). One class, one
# bounded repeat: no backtracking over host-like tokens. It must hold a digit (`node7`,
# `10.0.0.7`) so that `Error: ` and `warning: ` are not hosts.
_HOST = re.compile(r"([a-z0-9][a-z0-9.-]{0,62}): ")
_NCCL_HOST = re.compile(r"([A-Za-z0-9][\w.-]{0,62}):(\d{1,9}):(\d{1,9}) \[(\d{1,4})\] NCCL ")
_ISO = re.compile(
    r"\[?(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\]?"
)
_GLOG = re.compile(r"\[?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})(?: {1,8}\d{1,9})? ")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]\s?")
_SYSLOG = re.compile(r"(\w{3}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) ([\w.-]{1,64}) (?=[^\s:]{1,64}(?:\[\d{1,9}\])?: )")
# Launchers and process pools that name the process that died: Open MPI, Slurm, horovodrun,
# torch.multiprocessing.spawn, vLLM's worker processes (named after their rank).
_FAILED_PROCESS = re.compile(
    r"(?:mpirun noticed that process rank (\d{1,6}) with PID|srun: error: [\w.<>-]{1,64}: task (\d{1,6}): |"
    r"\b[Pp]rocess (\d{1,6}) (?:terminated with (?:signal|exit code)|exit with status code)|"
    r"\bVllmWorker-(\d{1,5}) died)"
)
_RANK_IN_TEXT = re.compile(r"\b[Rr]ank[ :=]?\s?(\d{1,5})\b")
_ISO_SCAN_LIMIT = 64


@dataclass(frozen=True)
class Prefix:
    rank: int | None
    host: str | None
    time: datetime | None
    message: str


def _parse_iso(match: re.Match[str]) -> datetime | None:
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or "0"
    micro = int((fraction + "000000")[:6])
    try:
        stamp = datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone.utc)
    except ValueError:
        return None
    offset = match.group(8)
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        stamp -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return stamp


def _parse_glog(match: re.Match[str], year: int) -> datetime | None:
    month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
    micro = int((match.group(7) + "000000")[:6])
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone.utc)
    except ValueError:
        return None


def _parse_named_month(match: re.Match[str], year: int) -> datetime | None:
    """Groups 1-5 of `match`: month name, day, hour, minute, second."""
    number = _MONTHS.get(match.group(1))
    if number is None:
        return None
    day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
    try:
        return datetime(year, number, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        return None


class _Peeled:
    """What the prefixes said so far: the first host and time, the innermost rank."""

    def __init__(self) -> None:
        self.rank: int | None = None
        self.host: str | None = None
        self.time: datetime | None = None


def _peel_one(head: str, found: _Peeled, year: int) -> int:
    """Length of the prefix at the start of `head` (0: none), recording what it names."""
    for kind, pattern in _PEELERS:
        match = pattern.match(head)
        if match:
            if kind is _Kind.rank:
                found.rank = int(match.group(1))
            elif kind is _Kind.host:
                found.host = found.host or match.group(1)
            return match.end()
    match = _GLOG.match(head)
    if match:
        found.time = found.time or _parse_glog(match, year)
        return match.end()
    match = _ISO.match(head)
    if match:
        found.time = found.time or _parse_iso(match)
        end = match.end()
        while end < len(head) and head[end] in " -|:":
            end += 1
        return end
    match = _DMESG_T.match(head)
    if match:
        found.time = found.time or _parse_named_month(match, int(match.group(6)))
        return match.end()
    match = _SYSLOG.match(head)
    if match and match.group(1) in _MONTHS:
        found.time = found.time or _parse_named_month(match, year)
        found.host = found.host or match.group(6)
        return match.end()
    match = _HOST.match(head)
    if match and found.host is None and any(c.isdigit() for c in match.group(1)):
        found.host = match.group(1)
        return match.end()
    return 0


def _skip_space(line: str, position: int) -> int:
    """The first non-blank position from `position`, looking at most HEAD characters ahead."""
    limit = min(len(line), position + HEAD)
    while position < limit and line[position].isspace():
        position += 1
    return position


def parse_prefix(line: str, default_year: int = 1970) -> Prefix:
    """Peel known prefixes off `line`: the first host and time, the innermost rank."""
    found = _Peeled()
    position = _skip_space(line, 0)
    for _ in range(MAX_PEELS):
        length = _peel_one(line[position : position + HEAD], found, default_year)
        if length == 0:
            break
        position = _skip_space(line, position + length)
    rest = line[position:]
    if found.host is None and " NCCL " in rest[:_NCCL_WINDOW]:
        nccl = _NCCL_HOST.search(rest[:_NCCL_WINDOW])
        if nccl:
            found.host = nccl.group(1)
    if found.time is None:
        iso = _ISO.search(rest[: _ISO_SCAN_LIMIT + 40])
        if iso and iso.start() < _ISO_SCAN_LIMIT:
            found.time = _parse_iso(iso)
    return Prefix(rank=found.rank, host=found.host, time=found.time, message=rest.strip())


def failed_process_rank(text: str) -> int | None:
    """The rank of a process a launcher reports dead (`mpirun noticed that process rank 1 with PID ...`)."""
    match = _FAILED_PROCESS.search(text[: 2 * HEAD])
    return int(next(g for g in match.groups() if g is not None)) if match else None


def rank_in_text(text: str) -> int | None:
    """A rank named inside the message itself (`[Rank 3] Watchdog caught ...`)."""
    match = _RANK_IN_TEXT.search(text[:HEAD])
    return int(match.group(1)) if match else None
