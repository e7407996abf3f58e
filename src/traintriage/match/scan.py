"""One pass over a source: Hyperscan reports matches, Python touches only those lines.

The output is bounded by the caps of the patterns (hits kept per source), never by
the size of the log: a 10 GB log with one error yields a handful of `LineHit`s plus
counters.
"""

from __future__ import annotations

import re
import zlib
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

from traintriage.ingest.chunks import CHUNK_SIZE, ReadProblem, iter_windows
from traintriage.ingest.mask import Masker
from traintriage.ingest.sources import Source
from traintriage.match.compiler import CONTEXT_HITS, Scanner
from traintriage.match.internal import Internal
from traintriage.match.tail_evidence import tail_evidence
from traintriage.parse.metrics import MAX_POINTS, MetricPoint, MetricSampler, parse_sampled, progress_states
from traintriage.parse.prefix import parse_prefix

# Bounded repeats: a CSI or OSC sequence longer than these is left as it is (an unbounded
# `[^\x07]*` would scan to the chunk's end from every unterminated `ESC ]`).
ANSI_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]{0,64}[ -/]{0,16}[@-~]|\][^\x07\x1b\n]{0,2048}(?:\x07|\x1b\\)|[@-Z\\-_])")
MAX_TEXT = 4000
"""Hit, context and tail lines are decoded to at most this many bytes: every parser after the
scan (prefix, traceback, torchrun report, facts, ranks) runs on texts this long at most."""
MAX_METRIC_LINE = 4096
CONTEXT_BEFORE = 80
"""Lines kept above a hit: enough for a chain of two Python 3.11 tracebacks (a line of carets under most
frames) and the log record that printed them, which says whether the program went on."""
CONTEXT_AFTER = 12
TAIL_LINES = 40
RECENT_LINES = max(TAIL_LINES, CONTEXT_BEFORE)
RECENT_LINE_BYTES = 64 << 10


@dataclass
class LineHit:
    """A line that matched one or more patterns, with its neighbours when asked for."""

    source: int
    line: int
    text: str
    patterns: list[int]
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


CLOCK = re.compile(r"\d\d:\d\d:\d\d")
"""Every time form the prefix parser reads (ISO, glog, syslog, dmesg) holds a clock time."""
_CLOCK_HINT = re.compile(r":\d\d:")
DATED = re.compile(r"-\d\d-\d\d[T _]\d\d:\d\d")
"""In every dated stamp (`2024-05-01 10:02`); led by a literal, so `re` skips from '-' to '-'."""


class Tail(Sequence[str]):
    """A source's last lines, held compressed until read: a worker's scan of each of 20,000
    small logs sent back and kept 40 lines (5 KB of text in 40 objects) per log, most of
    the parent's memory, while most tails are never read (the facts read a bounded prefix
    of them). Two questions asked of every tail are answered without unpacking it: does it
    hold a clock time, a dated stamp (masked placeholders never take part in either); and
    the last time it stamps is read in the worker, not in the parent one source after the
    other. A tail renamed for placeholders becomes a plain list again, read afresh."""

    __slots__ = ("_packed", "_count", "clock", "dated", "time", "near_a_frame")

    def __init__(self, lines: list[str]) -> None:
        joined = "\n".join(lines)
        self._packed = zlib.compress(joined.encode("utf-8", "surrogatepass"), 1) if lines else b""
        self._count = len(lines)
        self.clock = holds_clock(joined)
        self.dated = DATED.search(joined) is not None
        self.time = last_time(lines) if self.clock else None
        self.near_a_frame = ends_near_a_frame(lines)

    def lines(self) -> list[str]:
        if not self._count:
            return []
        return zlib.decompress(self._packed).decode("utf-8", "surrogatepass").split("\n")

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self.lines()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines())

    def __reversed__(self) -> Iterator[str]:
        return reversed(self.lines())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tail):
            return self.lines() == other.lines()
        return isinstance(other, Sequence) and not isinstance(other, str) and self.lines() == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Tail({self.lines()!r})"


def ends_near_a_frame(tail: Sequence[str]) -> bool:
    """A traceback frame's `File "` in one of the last three lines that are not blank (its source
    line and the carets under it may follow): whether the log may end inside a traceback
    (analyze/cut_traceback.py), asked of every healthy log of a fleet, so answered in the worker."""
    if isinstance(tail, Tail):
        return tail.near_a_frame
    kept = 0
    for text in reversed(tail):
        if not text.strip():
            continue
        if 'File "' in text:
            return True
        kept += 1
        if kept == 3:
            return False
    return False


def holds_clock(text: str) -> bool:
    """CLOCK.search(text) is not None, sooner: `:\\d\\d:` is led by a literal, so `re` skips
    to each ':' where CLOCK tries every position (0.2 ms per tail of 40 lines)."""
    return _CLOCK_HINT.search(text) is not None and CLOCK.search(text) is not None


def last_time(tail: Sequence[str]) -> float | None:
    """The last time stamped in a source's tail, as a POSIX timestamp. A line without a clock
    time (a traceback's) is not parsed: on a fleet of small logs that was 40 parses per log."""
    if isinstance(tail, Tail):
        return tail.time
    if not holds_clock("\n".join(tail)):
        return None
    for text in reversed(tail):
        if CLOCK.search(text) is None:
            continue
        stamp = parse_prefix(text).time
        if stamp is not None:
            return stamp.timestamp()
    return None


@dataclass
class SourceScan:
    source: int
    lines: int = 0
    bytes: int = 0
    hits: list[LineHit] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    metrics: list[MetricPoint] = field(default_factory=list)
    tail: list[str] | Tail = field(default_factory=list)
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


Span = tuple[int, int]
Chunk = bytes | bytearray
"""A chunk of lines: a bytes object, or the reader's reused buffer (see `iter_windows`)."""


def metric_slice(line: bytes) -> bytes:
    """What of a sampled line the metric parser reads: the line, or when it is huge its last
    `\r` segment (a progress bar's latest state) or its head, at most MAX_METRIC_LINE bytes."""
    if len(line) <= MAX_METRIC_LINE:
        return line
    last = line.rfind(b"\r") + 1
    if last and len(line) - last <= MAX_METRIC_LINE and line[last:].strip():
        return line[last:]
    return line[:MAX_METRIC_LINE]


def _clipped(line: bytes) -> bytes:
    """A kept line, cut to its head and tail when huge: only MAX_TEXT bytes of it are ever
    shown (the head, or the last `\r` segment), and forty 64 MB lines must not stay in memory."""
    if len(line) <= RECENT_LINE_BYTES:
        return line
    half = RECENT_LINE_BYTES // 2
    return line[:half] + b" ... " + line[-half:]


def _tail_lines(chunk: Chunk, tail: list[Span], changed: dict[int, bytes], text: Callable[[Span], bytes]) -> list[bytes]:
    """The text of the consecutive lines `tail`, as kept (masked, clipped): one copy and one
    split when masking changed none of them (the usual case), not a slice per line; every
    source keeps its last lines, and on a fleet of small logs that was most of a scan."""
    if not tail:
        return []
    first, last = tail[0][0], tail[-1][1]
    if changed and any(span[0] in changed for span in tail):
        lines = [text(span) for span in tail]
    else:
        lines = bytes(chunk[first:last]).split(b"\n")
    return [_clipped(line) for line in lines] if last - first > RECENT_LINE_BYTES else lines


def decode_tail(lines: list[bytes]) -> list[str]:
    """`decode_line` of each kept line, at once when they are short ASCII lines without `\r`."""
    joined = b"\n".join(lines)
    if (joined.isascii() and b"\r" not in joined
            and (len(joined) <= MAX_TEXT or max(map(len, lines)) <= MAX_TEXT)):
        return joined.decode("ascii").split("\n") if lines else []
    return [decode_line(line) for line in lines]


VECTOR_COUNT_BYTES = 4 << 10
"""From this many bytes on, newlines are counted with numpy (4x faster than `bytes.count`,
which is a byte-at-a-time loop, from 4 KB on); below, the array is not worth it."""
VECTOR_WINDOW_BYTES = 1 << 20
"""Only windows this big use numpy: a small log (one small window) never pays its import."""
COUNT_SLICE_BYTES = 256 << 10
_numpy: object = None


def count_newlines(chunk: Chunk, start: int, stop: int) -> int:
    """`chunk.count(b"\\n", start, stop)`: every byte of a big log passes through this count
    (line numbers), the largest cost after Hyperscan's own pass. On metric-dense logs the hits
    and curve samples are a few KB apart, so the segments counted are short."""
    global _numpy
    if stop - start < VECTOR_COUNT_BYTES or len(chunk) < VECTOR_WINDOW_BYTES:
        return chunk.count(b"\n", start, stop)
    if _numpy is None:
        try:
            import numpy  # only scans of big windows (workers of a big input) pay the import
        except ImportError:
            numpy = False  # type: ignore[assignment]
        _numpy = numpy
    if _numpy is False:
        return chunk.count(b"\n", start, stop)
    np = cast("Any", _numpy)
    data = np.frombuffer(chunk, np.uint8, stop - start, start)
    # Slices that stay in the core's cache: the comparison's temporary array of a whole 4 MB
    # window goes to memory and back, which made the count twice as slow.
    return sum(int(np.count_nonzero(data[at : at + COUNT_SLICE_BYTES] == _NEWLINE))
               for at in range(0, len(data), COUNT_SLICE_BYTES))


def _line_bounds(chunk: Chunk, offset: int, limit: int) -> tuple[int, int]:
    start = chunk.rfind(b"\n", 0, offset) + 1
    end = chunk.find(b"\n", offset, limit)
    return start, (end if end >= 0 else limit)




def _spans_before(chunk: Chunk, start: int, count: int) -> list[Span]:
    """Up to `count` lines that end just before offset `start` (a line start), in order.

    One `rsplit` of a slice that holds them, not a `rfind` per line: every source keeps its
    last lines, and on a fleet of small logs the per-line loop was a tenth of the scan."""
    if start <= 0 or count <= 0:
        return []
    end = start - 1
    reach = count * 128
    while True:
        low = max(0, end - reach)
        parts = chunk[low:end].rsplit(b"\n", count)
        if len(parts) > count or low == 0:
            break
        reach *= 8
    if len(parts) > count:
        del parts[0]  # what precedes the lines asked for (or a cut part of a line)
    spans: list[Span] = []
    position = end
    for part in reversed(parts):
        first = position - len(part)
        spans.append((first, position))
        position = first - 1
    spans.reverse()
    return spans


def _spans_after(chunk: Chunk, end: int, count: int, limit: int) -> list[Span]:
    """Up to `count` lines that follow the line ending at offset `end`, before `limit`."""
    spans: list[Span] = []
    position = end + 1
    while position < limit and len(spans) < count:
        following = chunk.find(b"\n", position, limit)
        following = following if following >= 0 else limit
        spans.append((position, following))
        position = following + 1
    return spans


@dataclass
class _Planned:
    """A hit, metric sample or context decided on the raw chunk, materialised once masked."""

    number: int
    span: Span
    pattern: int
    before: list[Span] | None = None
    after: list[Span] = field(default_factory=list)


class _SourceScanner:
    """Per-source state across chunks: caps, line numbers, the last lines seen (for context
    that reaches back into the previous chunk, and for the tail)."""

    def __init__(self, index: int, source: Source, scanner: Scanner, masker: Masker | None, metric_budget: int) -> None:
        self.index = index
        self.source = source
        self.scanner = scanner
        self.masker = masker
        self.result = SourceScan(source=index)
        self.kept: dict[int, int] = defaultdict(int)
        self.with_context: dict[int, int] = defaultdict(int)
        self.sampler = MetricSampler(source.size, metric_budget)
        self.recent: list[bytes] = []
        self.line_base = 0  # lines ended before the current window
        self.open_line = False  # the last window ended inside a line (cut at the line cap, or the end)

    def feed(self, chunk: Chunk, limit: int) -> None:
        """Scan `chunk[:limit]`, whole lines: one Hyperscan pass finds the signature hits and
        the lines the masker must see; only the lines kept are masked and decoded (as copies:
        the caller reuses the chunk's buffer)."""
        if chunk.find(b"\x1b", 0, limit) >= 0:
            chunk = ANSI_ESCAPE.sub(b"", memoryview(chunk)[:limit])
            limit = len(chunk)
            if not limit:  # the window held only escape sequences: no line, no text to keep
                return
        sink = _LineEvents(chunk, limit, self.scanner, self.kept, self.result.counts)
        with memoryview(chunk) as view, view[:limit] as lines:
            self.scanner.database.scan(cast(bytes, lines), match_event_handler=sink.on_match,
                                        scratch=self.scanner.scratch())  # any buffer
        events, state_lines = sink.events, sink.state_lines
        events.extend((start, stop, _METRIC) for start, stop in self.sampler.spans(chunk, limit))
        events.sort()
        ends_with_newline = chunk[limit - 1] == _NEWLINE
        planned = self._plan(chunk, limit, events)
        self.open_line = not ends_with_newline
        tail = _spans_before(chunk, limit if ends_with_newline else limit + 1, RECENT_LINES)
        wanted = dict(tail)  # line start -> line end: the masker need not look the ends up again
        for item in planned:
            wanted[item.span[0]] = item.span[1]
            wanted.update(item.after)
            wanted.update(item.before or ())
        changed = self.masker.changed_lines(chunk, wanted, state_lines, limit) \
            if self.masker is not None else {}

        def text(span: Span) -> bytes:
            masked = changed.get(span[0])
            return masked if masked is not None else bytes(chunk[span[0] : span[1]])

        self._materialise(planned, text)
        self.recent = (self.recent + _tail_lines(chunk, tail, changed, text))[-RECENT_LINES:]

    def _plan(self, chunk: Chunk, limit: int, events: list[tuple[int, int, int]]) -> list[_Planned]:
        """Number the event lines (one newline count per chunk) and choose which get context."""
        planned: list[_Planned] = []
        counted_to = 0
        lines_before = 0
        context_line = -1
        for start, stop, pattern in events:
            lines_before += count_newlines(chunk, counted_to, start)
            counted_to = start
            item = _Planned(self.line_base + lines_before + 1, (start, stop), pattern)
            planned.append(item)
            if pattern == _METRIC or not self.scanner.table[pattern].context or context_line == item.number:
                continue
            if self.with_context[pattern] < CONTEXT_HITS:
                self.with_context[pattern] += 1
                context_line = item.number
                item.before = _spans_before(chunk, start, CONTEXT_BEFORE)
                item.after = _spans_after(chunk, stop, CONTEXT_AFTER, limit)
        self.line_base += lines_before + count_newlines(chunk, counted_to, limit)
        return planned

    def _materialise(self, planned: list[_Planned], text: Callable[[Span], bytes]) -> None:
        result = self.result
        current: LineHit | None = None
        for item in planned:
            if item.pattern == _METRIC:
                for state in progress_states(text(item.span)):
                    point = parse_sampled(metric_slice(state), self.index, item.number, self.source.rank)
                    if point is not None:
                        result.metrics.append(point)
                continue
            if current is not None and current.line == item.number:
                current.patterns.append(item.pattern)
            else:
                current = LineHit(source=self.index, line=item.number, text=decode_line(text(item.span)),
                                  patterns=[item.pattern])
                result.hits.append(current)
            if item.before is not None:
                before = [text(span) for span in item.before]
                if len(before) < CONTEXT_BEFORE and (not item.before or item.before[0][0] == 0):
                    before = self.recent[len(self.recent) - (CONTEXT_BEFORE - len(before)) :] + before
                current.before = [decode_line(line) for line in before]
                current.after = [decode_line(text(span)) for span in item.after]
        result.metrics = self.sampler.thin(result.metrics)


def scan_source(
    index: int,
    source: Source,
    scanner: Scanner,
    mask_key: bytes | None = None,
    chunk_size: int | None = None,
    metric_budget: int = MAX_POINTS,
    on_bytes: Callable[[int], None] | None = None,
) -> SourceScan:
    """Scan one source, chunk by chunk.

    With a `mask_key`, every line that is kept (hit, context, curve sample, tail) is masked
    before it is decoded, so no unmasked byte reaches a hit, a context line or the tail;
    placeholders come back with keyed digests of their values for renumbering across sources.
    """
    masker = _primed_masker(source) if mask_key is not None else None
    state = _SourceScanner(index, source, scanner, masker, metric_budget)
    result = state.result
    stream = source.open()
    try:
        for chunk, limit in iter_windows(stream, source.name, result.problems, chunk_size or window_size(source)):
            result.bytes += limit
            if on_bytes is not None:
                on_bytes(limit)
            state.feed(chunk, limit)
    finally:
        stream.close()
    result.lines = state.line_base + int(state.open_line)
    if result.bytes == 0 and not result.problems:
        result.problems.append(ReadProblem(f"{source.name}: empty input (0 bytes), nothing to diagnose"))
    if masker is not None and mask_key is not None:
        result.placeholders = masker.placeholder_digests(mask_key)
    tail = decode_tail(state.recent[-TAIL_LINES:])
    result.tail = [t for t in tail if t.strip()]
    if source.span is None or source.span[1] >= (source.size or 0):  # the log's own end, not a share's
        _add_tail_hits(result, tail, scanner)
    return result


def _add_tail_hits(result: SourceScan, tail: list[str], scanner: Scanner) -> None:
    """The failure lines only the tail shows (see tail_evidence), as hits of the exception and
    fatal-line patterns, and a last line cut inside a signature's message (see cut_line), as
    hits of that signature: merged into the hit of the same line, else inserted in line order."""
    exception_id = scanner.by_internal(Internal.exception)[0]
    fatal_id = scanner.by_internal(Internal.fatal_line)[0]
    found = [(number, text, exception_id if is_exception else fatal_id)
             for number, text, is_exception in tail_evidence(tail, result.lines)]
    last = next((index for index in range(len(tail) - 1, -1, -1) if tail[index].strip()), None)
    if last is not None:
        number = result.lines - len(tail) + 1 + last
        found += [(number, tail[last], pattern) for pattern in scanner.cut_line_index().signatures_cut_in(tail[last])]
    for number, text, pattern in found:
        index = bisect_left(result.hits, number, key=lambda hit: hit.line)
        if index < len(result.hits) and result.hits[index].line == number:
            if pattern in result.hits[index].patterns:
                continue
            result.hits[index].patterns.append(pattern)
        else:
            result.hits.insert(index, LineHit(source=result.source, line=number, text=text, patterns=[pattern]))
        result.counts[pattern] += 1


_METRIC = -1
_NEWLINE = 10
PRIME_BYTES = 64 << 10
MIN_WINDOW = 64 << 10


def window_size(source: Source) -> int:
    """The read buffer for a source: a plain file smaller than a chunk gets one just bigger
    than itself (read whole in one window), since a fresh 4 MB buffer per 20 KB file was a
    fleet of small files' largest cost; compressed or streamed input gets a full chunk."""
    if source.splittable and source.size is not None:
        return max(MIN_WINDOW, min(CHUNK_SIZE, source.size + 1))
    return CHUNK_SIZE


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


CONFIRM_BEFORE = 64
CONFIRM_AFTER = 64
"""A confirm pattern runs on this window around its fast pattern's hit, never on the whole
line: a line of a million hits (a printed tensor of NaNs) costs a million small searches.
The window is small because a confirm pattern names the words next to the hit (a metric's
name before its value), and because it runs on every hit: Megatron prints `number of nan
iterations` on every iteration line."""
MAX_FAILED_CONFIRMS = 64
"""Per line and pattern: after this many hits that did not confirm, later ones on that line
are not checked (counted as not confirmed), so an endless line costs at most this many."""


class _LineCache:
    """The bounds of the line that holds an offset, found once per line: Hyperscan reports
    matches in order of their end, so consecutive matches mostly share a line, and looking
    the line's ends up again per match would make a long line quadratic."""

    def __init__(self, chunk: Chunk, limit: int) -> None:
        self.chunk = chunk
        self.limit = limit
        self.start = 0
        self.stop = -1

    def bounds(self, offset: int) -> Span:
        """(start, stop) as `_line_bounds` gives them; a line holds offsets start..stop (its newline)."""
        if not self.start <= offset <= self.stop:
            self.start, self.stop = _line_bounds(self.chunk, offset, self.limit)
        return self.start, self.stop


class _LineEvents:
    """Hyperscan's match handler for one window: decides each match as it is reported, so
    memory holds the kept events, not every match (a 64 MB line can hold millions).

    `events`: (line start, line stop, pattern) per kept match, one per pattern and line;
    `state_lines`: the starts of the lines where the masker's state prefilters fired."""

    def __init__(self, chunk: Chunk, limit: int, scanner: Scanner, kept: dict[int, int], counts: dict[int, int]) -> None:
        self.chunk = chunk
        self.table = scanner.table
        self.mask_base = scanner.mask_base
        self.kept = kept
        self.counts = counts
        self.events: list[tuple[int, int, int]] = []
        self.state_lines: set[int] = set()
        self.seen: set[tuple[int, int]] = set()
        self.confirmed: set[tuple[int, int]] = set()
        self.failed: dict[tuple[int, int], int] = defaultdict(int)
        self.lines = _LineCache(chunk, limit)

    def on_match(self, pattern: int, start: int, end: int, flags: int, context: object) -> bool | None:
        if pattern >= self.mask_base:
            self.state_lines.add(self.lines.bounds(max(end - 1, 0))[0])
            return None
        info = self.table[pattern]
        confirm = info.confirm
        if confirm is None and self.kept[pattern] >= info.cap:
            self.counts[pattern] += 1
            return None
        line_start, line_stop = self.lines.bounds(max(end - 1, 0))
        key = (line_start, pattern)
        if confirm is not None and key not in self.confirmed:
            if self.failed[key] >= MAX_FAILED_CONFIRMS:
                return None
            if not confirm.search(self.chunk, max(line_start, end - CONFIRM_BEFORE), min(line_stop, end + CONFIRM_AFTER)):
                self.failed[key] += 1
                return None
            self.confirmed.add(key)
        self.counts[pattern] += 1
        if self.kept[pattern] >= info.cap or key in self.seen:
            return None
        self.seen.add(key)
        self.kept[pattern] += 1
        self.events.append((line_start, line_stop, pattern))
        return None
