"""Matched lines, placed: which rank, host and time each belongs to, in a global order.

Lines without their own timestamp inherit the nearest earlier one of the same rank from
their context, so events from different ranks can still be ordered by time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from traintriage.ingest.sources import Source
from traintriage.match.scan import LineHit, SourceScan
from traintriage.parse.prefix import Prefix, failed_process_rank, parse_prefix, rank_in_text

_YEAR = re.compile(r"\b(20\d\d)-\d\d-\d\d[T _]\d\d:\d\d")


@dataclass
class Observation:
    hit: LineHit
    source_name: str
    rank: int | None
    host: str | None
    time: datetime | None
    message: str
    order: int

    @property
    def sort_key(self) -> tuple[float, int, int]:
        stamp = self.time.timestamp() if self.time else float("inf")
        return (stamp, self.hit.source, self.hit.line)


def same_rank_context(lines: list[str], rank: int | None, year: int = 1970) -> list[Prefix]:
    """Context lines as prefixes, keeping only those of the given rank (interleaved consoles)."""
    parsed = [parse_prefix(text, year) for text in lines]
    if rank is None:
        return parsed
    return [p for p in parsed if p.rank is None or p.rank == rank]


def place(scans: list[SourceScan], sources: list[Source]) -> list[Observation]:
    observations: list[Observation] = []
    year = _dominant_year(scans)
    for scan in scans:
        source = sources[scan.source]
        for hit in scan.hits:
            prefix = parse_prefix(hit.text, year)
            rank = prefix.rank if prefix.rank is not None else source.rank
            if rank is None:
                rank = failed_process_rank(prefix.message)
            if rank is None and "Rank" in hit.text[:80]:
                rank = rank_in_text(hit.text[:80])
            stamp = prefix.time
            if stamp is None and hit.before:
                for context in reversed(same_rank_context(hit.before, rank, year)):
                    if context.time is not None:
                        stamp = context.time
                        break
            observations.append(
                Observation(hit=hit, source_name=source.name, rank=rank, host=prefix.host, time=stamp,
                            message=prefix.message, order=len(observations))
            )
    return observations


def _dominant_year(scans: list[SourceScan]) -> int:
    """glog and syslog stamps carry no year; borrow it from a dated stamp in the log
    (torchrun's failure report always has one), else assume the current year."""
    for scan in scans:
        for text in [*(h.text for h in scan.hits), *(t for h in scan.hits for t in h.after[:3]), *scan.tail]:
            if "-" not in text[:80] or not _YEAR.search(text):
                continue
            prefix = parse_prefix(text)
            if prefix.time is not None and prefix.time.year > 1970:
                return prefix.time.year
            dated = _YEAR.search(text)
            if dated:
                return int(dated.group(1))
    return datetime.now(timezone.utc).year
