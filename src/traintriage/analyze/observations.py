"""Matched lines, placed: which rank, host and time each belongs to, in a global order.

Lines without their own timestamp inherit the nearest earlier one of the same rank from
their context, so events from different ranks can still be ordered by time.

torchrun's `[default3]:` tag names a local rank. It stands for the global rank only when
the log shows one node: one source, one host, and no line where a global rank differs
from the local one (`[default3]:[rank11]:`). Otherwise a line tagged only locally gets no
rank rather than a wrong one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from traintriage.ingest.sources import Source
from traintriage.match.scan import DATED, LineHit, SourceScan, Tail
from traintriage.parse.prefix import (
    Prefix,
    failed_process_rank,
    json_record_rank,
    parse_prefix,
    rank_in_text,
    span_rank,
)
from traintriage.parse.traceback import Traceback, escaped_traceback, parse_traceback

_YEAR = re.compile(r"\b(20\d\d)-\d\d-\d\d[T _]\d\d:\d\d")
_REPORT_RANKS = re.compile(r"rank\s*: (\d{1,6}) \(local_rank: (\d{1,6})\)")
_STEP_DAEMON = "slurmstepd: "


@dataclass
class Observation:
    hit: LineHit
    source_name: str
    rank: int | None
    host: str | None
    time: datetime | None
    message: str
    order: int
    local_rank: int | None = None

    @property
    def sort_key(self) -> tuple[float, int, int]:
        stamp = self.time.timestamp() if self.time else float("inf")
        return (stamp, self.hit.source, self.hit.line)


def same_rank_context(
    lines: list[str], rank: int | None, year: int = 1970, local_rank: int | None = None
) -> list[Prefix]:
    """Context lines as prefixes, keeping only those of the given process (interleaved
    consoles): a line tagged only with torchrun's local rank is compared by local rank
    when the caller knows it, else by whichever rank it carries."""
    parsed = [parse_prefix(text, year) for text in lines]
    if rank is None and local_rank is None:
        return parsed
    return [p for p in parsed if _same_process(p, rank, local_rank)]


def context_before(observation: Observation) -> list[str]:
    """The messages of the observation's own process printed just before its line (prefixes peeled)."""
    return [context.message for context in
            same_rank_context(observation.hit.before, observation.rank, local_rank=observation.local_rank)]


def traceback_before(observation: Observation) -> Traceback | None:
    """The Python traceback that ends at the observation's line, from its own process's lines
    printed before it, or within the line itself when a structured logger escaped it into a JSON string."""
    return escaped_traceback(observation.hit.text) or parse_traceback(context_before(observation), observation.message)


def _same_process(prefix: Prefix, rank: int | None, local_rank: int | None) -> bool:
    if prefix.rank is None and prefix.local_rank is not None and local_rank is not None:
        return prefix.local_rank == local_rank
    own = prefix.rank if prefix.rank is not None else prefix.local_rank
    return own is None or rank is None or own == rank


def local_ranks_are_global(prefixes: list[tuple[int, Prefix]]) -> bool:
    """True when the log shows a single node, so torchrun's local rank is the global rank:
    lines with a local tag come from one source and one host, and none pairs its local
    rank with a different global one, nor does torchrun's failure report
    (`rank : 19 (local_rank: 3)`). (source index, prefix) pairs."""
    sources: set[int] = set()
    hosts: set[str] = set()
    for source, prefix in prefixes:
        if "local_rank" in prefix.message:
            report = _REPORT_RANKS.search(prefix.message)
            if report and report.group(1) != report.group(2):
                return False
        if prefix.local_rank is None:
            continue
        if prefix.rank is not None and prefix.rank != prefix.local_rank:
            return False
        sources.add(source)
        if prefix.host is not None:
            hosts.add(prefix.host)
    return len(sources) <= 1 and len(hosts) <= 1


def local_tags_are_global(scans: list[SourceScan], parsed: list[list[Prefix]] | None = None) -> bool:
    """`local_ranks_are_global` over a whole run: the matched lines' prefixes (`parsed`, one
    list per scan, when the caller has them) and the sampled metric lines."""
    if parsed is None:
        parsed = [[parse_prefix(hit.text) for hit in scan.hits] for scan in scans]
    tagged = [(scan.source, prefix) for scan, prefixes in zip(scans, parsed, strict=True) for prefix in prefixes]
    # the sampled metric lines span the whole log: the other nodes' hosts show there
    tagged += [(scan.source, Prefix(rank=p.rank, host=p.host, time=None, message="", local_rank=p.local_rank))
               for scan in scans for p in scan.metrics if p.local_rank is not None]
    return local_ranks_are_global(tagged)


def _rank_after(hit: LineHit) -> int | None:
    """A rank printed just after the line: TGI's `rank=N` span field closing a shard's
    output, before the launcher's next (time-stamped) event."""
    for text in hit.after[:2]:
        if text[:1].isdigit():
            return None
        rank = span_rank(text)
        if rank is not None:
            return rank
    return None


def printed_time(observation: Observation) -> datetime | None:
    """The time printed on the observation's own line. `Observation.time` may be borrowed from
    an earlier line (a start-up banner, the previous message) to order events; that borrowed
    time is not when this event happened, so a report must not show it as such."""
    if observation.time is None:
        return None
    return parse_prefix(observation.hit.text, observation.time.year).time


def place(scans: list[SourceScan], sources: list[Source]) -> list[Observation]:
    observations: list[Observation] = []
    year = _dominant_year(scans)
    parsed = [[parse_prefix(hit.text, year) for hit in scan.hits] for scan in scans]
    local_is_global = local_tags_are_global(scans, parsed)
    for scan, prefixes in zip(scans, parsed, strict=True):
        source = sources[scan.source]
        for hit, prefix in zip(scan.hits, prefixes, strict=True):
            rank = prefix.rank if prefix.rank is not None else source.rank
            if prefix.message.startswith(_STEP_DAEMON):
                rank = None  # slurmstepd speaks for the whole step; srun's `N:` label only names the stream it went to
            if rank is None and local_is_global:
                rank = prefix.local_rank
            if rank is None:
                rank = failed_process_rank(prefix.message)
            if rank is None and "Rank" in hit.text[:80]:
                rank = rank_in_text(hit.text[:80])
            if rank is None and "rank=" in hit.text[-24:]:
                rank = span_rank(hit.text)
            if rank is None:
                rank = json_record_rank(prefix.message)
            if rank is None and hit.after:
                rank = _rank_after(hit)
            stamp = prefix.time
            if stamp is None and hit.before:
                for context in reversed(same_rank_context(hit.before, rank, year, prefix.local_rank)):
                    if context.time is not None:
                        stamp = context.time
                        break
            observations.append(
                Observation(hit=hit, source_name=source.name, rank=rank, host=prefix.host, time=stamp,
                            message=prefix.message, order=len(observations), local_rank=prefix.local_rank)
            )
    return observations


def _dominant_year(scans: list[SourceScan]) -> int:
    """glog and syslog stamps carry no year; borrow it from a dated stamp in the log
    (torchrun's failure report always has one), else assume the current year."""
    for scan in scans:
        texts = [*(h.text for h in scan.hits), *(t for h in scan.hits for t in h.after[:3])]
        tail = scan.tail
        if isinstance(tail, Tail):  # packed: it knows whether it holds a dated stamp
            if tail.dated:
                texts.extend(tail)
        else:
            texts.extend(tail)
        # One search per source: DATED is in every _YEAR match, none spans a line break.
        if DATED.search("\n".join(texts)) is None:
            continue
        for text in texts:
            if "-" not in text[:80] or not _YEAR.search(text):
                continue
            prefix = parse_prefix(text)
            if prefix.time is not None and prefix.time.year > 1970:
                return prefix.time.year
            dated = _YEAR.search(text)
            if dated:
                return int(dated.group(1))
    return datetime.now(timezone.utc).year
