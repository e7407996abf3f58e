"""One pass over a source: Hyperscan reports matches, Python touches only those lines.

The output is bounded by the caps of the patterns (hits kept per source), never by
the size of the log: a 10 GB log with one error yields a handful of `LineHit`s plus
counters.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from traintriage.ingest.chunks import ReadProblem, iter_chunks
from traintriage.ingest.mask import Masker
from traintriage.ingest.sources import Source
from traintriage.match.compiler import CONTEXT_HITS, PatternInfo, Scanner
from traintriage.parse.metrics import MAX_POINTS, MetricPoint, MetricSampler, parse_sampled

ANSI_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
MAX_TEXT = 4000
CONTEXT_BEFORE = 40
CONTEXT_AFTER = 12
TAIL_LINES = 40


@dataclass
class LineHit:
    """A line that matched one or more patterns, with its neighbours when asked for."""

    source: int
    line: int
    text: str
    patterns: list[int]
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass
class SourceScan:
    source: int
    lines: int = 0
    bytes: int = 0
    hits: list[LineHit] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    metrics: list[MetricPoint] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    problems: list[ReadProblem] = field(default_factory=list)
    tail_time: float | None = None
    placeholders: dict[str, str] = field(default_factory=dict)


def decode_line(raw: bytes, hit_offset: int | None = None) -> str:
    """Bytes of one line to text: tolerant UTF-8, no CR, the `\\r` segment that holds the hit."""
    if b"\r" in raw:
        if hit_offset is not None:
            start = raw.rfind(b"\r", 0, max(hit_offset, 0)) + 1
            end = raw.find(b"\r", max(hit_offset, 0))
            segment = raw[start : end if end >= 0 else len(raw)]
            raw = segment if segment.strip() else raw.replace(b"\r", b"")
        else:
            parts = [p for p in raw.split(b"\r") if p.strip()]
            raw = parts[-1] if parts else b""
    if len(raw) > MAX_TEXT:
        raw = raw[:MAX_TEXT] + b" ..."
    return raw.decode("utf-8", "replace")


def _line_bounds(chunk: bytes, offset: int) -> tuple[int, int]:
    start = chunk.rfind(b"\n", 0, offset) + 1
    end = chunk.find(b"\n", offset)
    return start, (end if end >= 0 else len(chunk))


def _context(chunk: bytes, start: int, end: int) -> tuple[list[str], list[str]]:
    before: list[bytes] = []
    position = start
    while position > 0 and len(before) < CONTEXT_BEFORE:
        previous = chunk.rfind(b"\n", 0, position - 1) + 1
        before.append(chunk[previous : position - 1])
        position = previous
    before.reverse()
    after: list[bytes] = []
    position = end + 1
    while position < len(chunk) and len(after) < CONTEXT_AFTER:
        following = chunk.find(b"\n", position)
        following = following if following >= 0 else len(chunk)
        after.append(chunk[position:following])
        position = following + 1
    return [decode_line(b) for b in before], [decode_line(a) for a in after]


def scan_source(
    index: int,
    source: Source,
    scanner: Scanner,
    mask_key: bytes | None = None,
    chunk_size: int | None = None,
    metric_budget: int = MAX_POINTS,
    on_bytes: Callable[[int], None] | None = None,
) -> SourceScan:
    """Scan one source; one newline-count pass per chunk numbers hits and sampled metric lines.

    With a `mask_key`, every chunk is masked before the scanner reads it, so no unmasked
    byte reaches a hit, a context line or the tail; placeholders come back with keyed
    digests of their values for renumbering across sources.
    """
    result = SourceScan(source=index)
    masker = _primed_masker(source) if mask_key is not None else None
    table = scanner.table
    kept: dict[int, int] = defaultdict(int)
    with_context: dict[int, int] = defaultdict(int)
    sampler = MetricSampler(source.size, metric_budget)
    matches: list[tuple[int, int]] = []

    def on_match(pattern: int, start: int, end: int, flags: int, context: object) -> bool | None:
        matches.append((end, pattern))
        return None

    stream = source.open()
    line_base = 0
    previous_tail = b""
    try:
        for chunk in iter_chunks(stream, source.name, result.problems, **({"chunk_size": chunk_size} if chunk_size else {})):
            result.bytes += len(chunk)
            if on_bytes is not None:
                on_bytes(len(chunk))
            if masker is not None:
                chunk = masker.mask_chunk(chunk)
            if b"\x1b" in chunk:
                chunk = ANSI_ESCAPE.sub(b"", chunk)
            matches.clear()
            scanner.database.scan(chunk, match_event_handler=on_match)
            events = _line_events(chunk, matches, table, kept, result.counts)
            events.extend((start, stop, _METRIC) for start, stop in sampler.spans(chunk))
            events.sort()
            counted_to = 0
            lines_before = 0
            current: LineHit | None = None
            for start, stop, pattern in events:
                lines_before += chunk.count(b"\n", counted_to, start)
                counted_to = start
                number = line_base + lines_before + 1
                if pattern == _METRIC:
                    point = parse_sampled(chunk[start:stop], index, number, source.rank)
                    if point is not None:
                        result.metrics.append(point)
                    continue
                if current is not None and current.line == number:
                    current.patterns.append(pattern)
                else:
                    current = LineHit(source=index, line=number, text=decode_line(chunk[start:stop]), patterns=[pattern])
                    result.hits.append(current)
                if table[pattern].context and not current.before and with_context[pattern] < CONTEXT_HITS:
                    with_context[pattern] += 1
                    shift = len(previous_tail)
                    current.before, current.after = _context(previous_tail + chunk, start + shift, stop + shift)
            result.metrics = sampler.thin(result.metrics)
            line_base += lines_before + chunk.count(b"\n", counted_to)
            if not chunk.endswith(b"\n"):
                line_base += 1
            previous_tail = chunk[-65536:]
            previous_tail = previous_tail[previous_tail.find(b"\n") + 1 :]
    finally:
        if source.path is not None:
            stream.close()
    result.lines = line_base
    if masker is not None and mask_key is not None:
        result.placeholders = masker.placeholder_digests(mask_key)
    tail = [decode_line(line) for line in previous_tail.split(b"\n")[-TAIL_LINES - 1 :]]
    result.tail = [t for t in tail if t.strip()][-TAIL_LINES:]
    return result


_METRIC = -1
PRIME_BYTES = 64 << 10


def _primed_masker(source: Source) -> Masker:
    """A masker for this source; a share of a split file first reads the 64 KB before it, so
    a private-key block or a key=value that straddles the split point is still masked."""
    masker = Masker()
    if source.span is not None and source.span[0] > 0 and source.path is not None:
        start = source.span[0]
        with open(source.path, "rb") as handle:
            handle.seek(max(0, start - PRIME_BYTES))
            before = handle.read(min(start, PRIME_BYTES))
        if start > PRIME_BYTES:
            before = before[before.find(b"\n") + 1 :]
        masker.mask_chunk(before)
    return masker


def _line_events(
    chunk: bytes, matches: list[tuple[int, int]], table: list[PatternInfo], kept: dict[int, int], counts: dict[int, int]
) -> list[tuple[int, int, int]]:
    """(line start, line stop, pattern) per kept match; one entry per pattern and line."""
    events: list[tuple[int, int, int]] = []
    seen: set[tuple[int, int]] = set()
    for end, pattern in matches:
        counts[pattern] += 1
        if kept[pattern] >= table[pattern].cap:
            continue
        start, stop = _line_bounds(chunk, max(end - 1, 0))
        if (start, pattern) in seen:
            continue
        seen.add((start, pattern))
        kept[pattern] += 1
        events.append((start, stop, pattern))
    return events
