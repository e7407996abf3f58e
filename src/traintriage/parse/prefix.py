"""Read the rank, host and time that launchers and loggers put in front of a line.

Prefixes stack (`node-1: [default3]:[rank3]: 2024-05-01 10:02:11,123 ERROR ...`), so
they are peeled one at a time from the left. Only lines that matter are parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

_RANK_PREFIXES = (
    re.compile(r"\[(?:default|worker|trainer)(\d+)\]:\s?"),  # torchrun --tee (role + rank)
    re.compile(r"\[[Rr]ank\s?(\d+)\]:?\s?"),  # PyTorch distributed log prefix
    re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>:\s?"),  # mpirun --tag-output
    re.compile(r"\[(\d+)\]<std(?:out|err)>:\s?"),
    re.compile(r"(\d{1,5}): (?=\S)"),  # srun --label
    re.compile(r"\[PG [^\]]*Rank (\d+)\]\s?"),  # ProcessGroupNCCL messages
)
_HOST_PREFIX = re.compile(r"([a-z][a-z0-9.-]*\d[a-z0-9.-]*): (?=\S)")
_NCCL_HOST = re.compile(r"([A-Za-z0-9][\w.-]*):(\d+):(\d+) \[(\d+)\] NCCL ")
_ISO = re.compile(
    r"\[?(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\]?"
)
_GLOG = re.compile(r"\[?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})(?: +\d+)? ")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]\s?")
_SYSLOG = re.compile(r"(\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) ([\w.-]+) (?=\S+(?:\[\d+\])?: )")
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
        stamp = stamp.replace(tzinfo=None)
        from datetime import timedelta

        stamp = (stamp - sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))).replace(tzinfo=timezone.utc)
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


def parse_prefix(line: str, default_year: int = 1970) -> Prefix:
    """Peel known prefixes off `line`; the first rank, host and time found win."""
    rank: int | None = None
    host: str | None = None
    stamp: datetime | None = None
    rest = line
    for _ in range(6):
        peeled = False
        stripped = rest.lstrip()
        for pattern in _RANK_PREFIXES:
            match = pattern.match(stripped)
            if match:
                if rank is None:
                    rank = int(match.group(1))
                rest = stripped[match.end() :]
                peeled = True
                break
        if peeled:
            continue
        match = _GLOG.match(stripped)
        if match:
            stamp = stamp or _parse_glog(match, default_year)
            rest = stripped[match.end() :]
            continue
        match = _ISO.match(stripped)
        if match:
            stamp = stamp or _parse_iso(match)
            rest = stripped[match.end() :].lstrip(" -|:")
            continue
        match = _DMESG_T.match(stripped)
        if match:
            stamp = stamp or _parse_named_month(match, int(match.group(6)))
            rest = stripped[match.end() :]
            continue
        match = _SYSLOG.match(stripped)
        if match and match.group(1) in _MONTHS:
            stamp = stamp or _parse_named_month(match, default_year)
            host = host or match.group(6)
            rest = stripped[match.end() :]
            continue
        match = _HOST_PREFIX.match(stripped)
        if match and host is None:
            host = match.group(1)
            rest = stripped[match.end() :]
            continue
        break
    nccl = _NCCL_HOST.search(rest) if host is None and " NCCL " in rest else None
    if nccl:
        host = nccl.group(1)
    if stamp is None:
        iso = _ISO.search(rest, 0, _ISO_SCAN_LIMIT + 32)
        if iso and iso.start() < _ISO_SCAN_LIMIT:
            stamp = _parse_iso(iso)
    return Prefix(rank=rank, host=host, time=stamp, message=rest.strip())


def rank_in_text(text: str) -> int | None:
    """A rank named inside the message itself (`[Rank 3] Watchdog caught ...`)."""
    match = _RANK_IN_TEXT.search(text)
    return int(match.group(1)) if match else None
