"""The stateful masker: one instance per log, so placeholders are numbered per log.

Hot path: ``mask_chunk`` scans megabytes with one Hyperscan database, then runs the precise
Python detectors only on the lines it hit, and copies every other byte through untouched
(invalid UTF-8 included). State carried from line to line: open PEM blocks, placeholder
numbers, and "learned" values (a password seen once under its key is masked wherever it
appears later, even without the key).
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator

import hyperscan

from traintriage.ingest.mask.detectors import ALL_DETECTORS
from traintriage.ingest.mask.detectors.keys import PRIVATE_KEY, PemBlock
from traintriage.ingest.mask.filters import may_spread
from traintriage.ingest.mask.model import Candidate, Detector
from traintriage.ingest.mask.placeholders import Placeholders
from traintriage.ingest.mask.prefilter import LineHits, LiteralFilter, Prefilter, detector_database

_SECRET_GROUPS = ("s", "s2", "s3", "s4", "s5", "s6")
_UNCHANGED = b"\x00unchanged"
_OPENER = {")": "(", "]": "[", "}": "{", ">": "<", ",": "", ";": ""}
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
MAX_LEARNED = 1024
_LEARNED_PRIORITY = 10
# The same line often recurs (every rank prints the same traceback, NCCL repeats itself):
# remember recent results. Bounded in entries and in line length.
CACHE_ENTRIES = 8192
CACHE_LINE_BYTES = 2048


class Masker:
    """Masks one log, line by line or chunk by chunk, keeping placeholders consistent."""

    def __init__(self, detectors: tuple[Detector, ...] = ALL_DETECTORS) -> None:
        self._detectors = detectors
        database, self._pem_bit = _compiled(detectors)
        self._prefilter = Prefilter(database, shared=True)
        self._pem = PemBlock()
        self._placeholders = Placeholders()
        self._learned: list[tuple[str, str, str]] = []  # (value, kind, identity)
        self._learned_values: set[str] = set()
        self._learned_bytes: list[bytes] = []
        self._learned_patterns: dict[int, re.Pattern[str]] = {}
        self._learned_filter: LiteralFilter | None = None
        self._learned_dirty = False
        self._fresh: list[int] = []  # learned ids added while the current line was masked
        self._cache: dict[tuple[bytes, int, int], bytes] = {}

    # -- public API ----------------------------------------------------------------------

    def mask_line(self, line: str) -> str:
        """Mask one line (given without its newline); state carries over to the next call."""
        data = line.encode("utf-8", "surrogatepass")
        return self.mask_chunk(data).decode("utf-8", "surrogatepass")

    def mask_chunk(self, chunk: bytes) -> bytes:
        """Mask a chunk of whole lines; the result has exactly as many b"\\n" as ``chunk``."""
        if not chunk:
            return chunk
        out: list[bytes] = []
        copied_to = 0

        def splice(start: int, end: int, raw: bytes, masked: bytes) -> None:
            nonlocal copied_to
            if masked is not raw:
                out.append(chunk[copied_to:start])
                out.append(masked)
                copied_to = end

        self._walk(chunk, self._prefilter.scan(chunk), None, splice)
        if not out:
            return chunk
        out.append(chunk[copied_to:])
        return b"".join(out)

    def mask_lines(
        self, chunk: bytes | bytearray, wanted: Iterable[int], state_lines: Iterable[int], limit: int | None = None
    ) -> dict[int, bytes]:
        """The masked text of the lines of ``chunk[:limit]`` that start at the ``wanted`` offsets.

        For a caller that keeps a few lines of a large chunk (the scanner: hits, context,
        samples, tail). ``state_lines`` must hold every line where a detector that carries
        state (learns a value, opens a PEM block) may fire: the scanner's own pass finds them
        with ``state_prefilters``. Other lines cannot change what is masked later, so they are
        skipped; each wanted line has the spans masked that ``mask_chunk`` would mask (only a
        placeholder's number, or its kind for a value first seen on a skipped line, may differ).
        ``wanted`` may be a dict from each start to its line's end, when the caller knows them.
        """
        return self._selected_lines(chunk, wanted, state_lines, limit, changed_only=False)

    def changed_lines(
        self, chunk: bytes | bytearray, wanted: Iterable[int], state_lines: Iterable[int], limit: int | None = None
    ) -> dict[int, bytes]:
        """``mask_lines``, but only the wanted lines that masking changed (the caller reads the
        others from ``chunk``): the scanner keeps ~40 lines of every source, and on a fleet of
        small logs walking each of them cost more than the rest of masking. Only the lines a
        detector or a learned value hits are walked: a selected line that nothing hits comes
        out unchanged and changes no state, and a value learned on the way is searched for in
        the lines after it (``_search_pending``), so the same lines change, the same way.
        """
        return self._selected_lines(chunk, wanted, state_lines, limit, changed_only=True)

    def _selected_lines(
        self, chunk: bytes | bytearray, wanted: Iterable[int], state_lines: Iterable[int], limit: int | None,
        *, changed_only: bool,
    ) -> dict[int, bytes]:
        wanted_set = wanted if isinstance(wanted, set) else set(wanted)
        selected = wanted_set.union(state_lines)
        found: dict[int, bytes] = {}

        def keep(start: int, end: int, raw: bytes, masked: bytes) -> None:
            if start in wanted_set and not (changed_only and masked is raw):
                found[start] = masked

        if chunk and selected:
            hits = self._prefilter.scan_lines(chunk, selected, limit, wanted if isinstance(wanted, dict) else None)
            self._walk(chunk, hits, selected, keep, limit, hit_lines_only=changed_only)
        return found

    def _walk(
        self,
        chunk: bytes | bytearray,
        hits: LineHits,
        selected: set[int] | None,
        emit: Callable[[int, int, bytes, bytes], None],
        limit: int | None = None,
        *,
        hit_lines_only: bool = False,
    ) -> None:
        """Mask, in order, the lines that need it: prefilter hits, lines holding a learned value,
        PEM bodies, and every ``selected`` line; ``emit`` hears of each (start, end, raw, masked).
        With ``selected``, lines outside it are visited only while a PEM block is open; with
        ``hit_lines_only`` too, only the selected lines that hits name (see ``mask_lines``)."""
        learned_hits = self._scan_learned(chunk)
        if selected is None:
            queue = sorted(set(hits) | set(learned_hits))
        elif hit_lines_only:
            queue = sorted({start for start in (*hits, *learned_hits) if start in selected})
        else:
            queue = sorted(selected)
        if self._pem.active:
            queue.insert(0, 0)
        if not queue:
            return
        heapq.heapify(queue)
        done = -1
        size = len(chunk) if limit is None else limit
        # Values learned in this chunk are searched for later in it lazily and together: lines
        # processed next to each other check them directly; before a stretch of unscanned lines
        # is skipped, one literal scan covers all of them (an env dump teaches several at once).
        pending: list[int] = []
        pending_from = 0
        while True:
            while queue:
                start = heapq.heappop(queue)
                if start <= done:
                    continue
                if pending and start > pending_from:
                    self._search_pending(chunk, pending, pending_from, learned_hits, queue, selected)
                    pending = []
                    heapq.heappush(queue, start)
                    continue
                done = start
                newline = chunk.find(b"\n", start, size)
                end = size if newline < 0 else newline
                raw = bytes(chunk[start:end])  # hashable (the line cache), and a copy the caller may keep
                learned_bits = learned_hits.get(start, 0)
                for learned_id in pending:
                    if self._learned_bytes[learned_id] in raw:
                        learned_bits |= 1 << learned_id
                detector_bits = hits.get(start, 0)
                if detector_bits or learned_bits or self._pem.active:
                    masked = self._mask_raw(raw, detector_bits, learned_bits)
                else:
                    masked = raw
                emit(start, end, raw, masked)
                if self._pem.active and end < size:
                    heapq.heappush(queue, end + 1)
                if self._fresh:
                    pending.extend(self._fresh)
                    self._fresh.clear()
                if pending:
                    pending_from = end + 1
            if not pending or pending_from >= size:
                break
            self._search_pending(chunk, pending, pending_from, learned_hits, queue, selected)
            pending = []

    def placeholder_digests(self, key: bytes) -> dict[str, str]:
        """Each placeholder used so far with a keyed digest of its value, so that placeholders
        numbered independently in several processes can be renumbered consistently without
        the values ever leaving the process that masked them."""
        return {name: hmac.new(key, identity.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
                for name, identity in self._placeholders.items()}

    def mask_chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Mask a sequence of whole-line chunks (as ``ingest.chunks.iter_chunks`` yields them)."""
        for chunk in chunks:
            yield self.mask_chunk(chunk)

    # -- one line --------------------------------------------------------------------------

    def _mask_raw(self, raw: bytes, detector_bits: int, learned_bits: int) -> bytes:
        """Mask one line of bytes, from the cache when the same line was masked before."""
        cacheable = (
            not self._pem.active and not detector_bits & self._pem_bit and len(raw) <= CACHE_LINE_BYTES
        )
        if cacheable:
            key = (raw, detector_bits, learned_bits)
            cached = self._cache.get(key)
            if cached is not None:
                return raw if cached is _UNCHANGED else cached
        text = raw.decode("utf-8", "surrogateescape")
        masked = self._mask_text(text, detector_bits, learned_bits)
        result = raw if masked is text else masked.encode("utf-8", "surrogateescape")
        if cacheable:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.clear()
            # Learned ids are part of the key, so a line that taught a value is recomputed next time.
            self._cache[(raw, detector_bits, learned_bits)] = _UNCHANGED if result is raw else result
        return result

    def _mask_text(self, line: str, detector_bits: int, learned_bits: int) -> str:
        if self._pem.active:
            span = self._pem.body_span(line)
            if span is not None:
                name = self._placeholders.name("PRIVATE_KEY", "pem:" + self._pem.identity)
                return line[: span[0]] + name + line[span[1] :]
        candidates = self._candidates(line, detector_bits) if detector_bits else []
        if learned_bits:
            candidates.extend(self._learned_candidates(line, learned_bits))
        if detector_bits & self._pem_bit:
            self._pem.opens(line)
        if not candidates:
            return line
        chosen = _select(candidates)
        learned_before = len(self._learned)
        for candidate in chosen:
            if candidate.learn:
                self._learn(candidate)
        if len(self._learned) > learned_before:
            # A value learned here may recur further along this very line.
            fresh_bits = ((1 << len(self._learned)) - 1) ^ ((1 << learned_before) - 1)
            candidates.extend(self._learned_candidates(line, fresh_bits))
            chosen = _select(candidates)
        if not chosen:
            return line
        pieces: list[str] = []
        position = 0
        for candidate in chosen:
            pieces.append(line[position : candidate.start])
            pieces.append(self._placeholders.name(candidate.kind, candidate.identity))
            position = candidate.end
        pieces.append(line[position:])
        return "".join(pieces)

    def _candidates(self, line: str, bits: int) -> list[Candidate]:
        found: list[Candidate] = []
        index = 0
        while bits:
            if bits & 1:
                found.extend(_detect(self._detectors[index], line))
            bits >>= 1
            index += 1
        return found

    # -- learned values ----------------------------------------------------------------------

    def _learn(self, candidate: Candidate) -> None:
        value = candidate.value
        if value in self._learned_values or len(self._learned) >= MAX_LEARNED:
            return
        if not may_spread(candidate.kind, value):
            return
        self._learned_values.add(value)
        self._learned.append((value, candidate.kind, candidate.identity))
        self._learned_bytes.append(value.encode("utf-8", "surrogateescape"))
        self._learned_dirty = True
        self._fresh.append(len(self._learned) - 1)

    def _learned_pattern(self, learned_id: int) -> re.Pattern[str]:
        pattern = self._learned_patterns.get(learned_id)
        if pattern is None:
            value = self._learned[learned_id][0]
            pattern = re.compile(r"(?<![A-Za-z0-9])" + re.escape(value) + r"(?![A-Za-z0-9])")
            self._learned_patterns[learned_id] = pattern
        return pattern

    def _learned_candidates(self, line: str, bits: int) -> Iterator[Candidate]:
        learned_id = 0
        while bits:
            if bits & 1:
                _, kind, identity = self._learned[learned_id]
                for match in self._learned_pattern(learned_id).finditer(line):
                    yield Candidate(
                        line, match.start(), match.end(), kind, _LEARNED_PRIORITY, identity=identity
                    )
            bits >>= 1
            learned_id += 1

    def _scan_learned(self, chunk: bytes | bytearray) -> LineHits:
        self._fresh.clear()
        if not self._learned:
            return {}
        if self._learned_dirty or self._learned_filter is None:
            self._learned_filter = LiteralFilter(self._learned_bytes)
            self._learned_dirty = False
        return self._learned_filter.scan(chunk)

    def _search_pending(
        self,
        chunk: bytes | bytearray,
        pending: list[int],
        offset: int,
        learned_hits: LineHits,
        queue: list[int],
        selected: set[int] | None,
    ) -> None:
        """Queue the lines from ``offset`` on that hold a value learned earlier in this chunk
        (only the ``selected`` ones, when the caller keeps a few lines)."""
        found = LiteralFilter([self._learned_bytes[i] for i in pending]).scan(chunk[offset:])
        for start, bits in found.items():
            if selected is not None and offset + start not in selected:
                continue
            learned_bits = 0
            for position, learned_id in enumerate(pending):
                if bits >> position & 1:
                    learned_bits |= 1 << learned_id
            learned_hits[offset + start] = learned_hits.get(offset + start, 0) | learned_bits
            heapq.heappush(queue, offset + start)


_COMPILED: dict[int, tuple[tuple[Detector, ...], hyperscan.Database, int]] = {}


def _compiled(detectors: tuple[Detector, ...]) -> tuple[hyperscan.Database, int]:
    """The prefilter database of ``detectors`` and the PEM detector's bit, found by identity:
    hashing the detectors for ``detector_database``'s cache cost more than the rest of a new
    masker, made once per log (20,000 times on a fleet of small logs)."""
    held = _COMPILED.get(id(detectors))
    if held is None or held[0] is not detectors:
        pem_bit = 1 << detectors.index(PRIVATE_KEY) if PRIVATE_KEY in detectors else 0
        held = _COMPILED[id(detectors)] = (detectors, detector_database(detectors), pem_bit)
    return held[1], held[2]


def state_prefilters(detectors: tuple[Detector, ...] = ALL_DETECTORS) -> list[tuple[str, bool, int]]:
    """(pattern, caseless, detector index) for the detectors whose hits change later masking:
    those that learn values, and the PEM opener. A scanner runs these in its own pass and
    hands the lines they hit to ``Masker.mask_lines``."""
    return [
        (pattern, detector.caseless_prefilter, index)
        for index, detector in enumerate(detectors)
        if detector.learn or detector is PRIVATE_KEY
        for pattern in detector.prefilter
    ]


def _detect(detector: Detector, line: str) -> list[Candidate]:
    """Run one detector's precise pattern over a line and keep what its filters let through."""
    pattern = detector.pattern.compiled
    groups = pattern.groupindex
    secret_groups = [name for name in _SECRET_GROUPS if name in groups]
    found: list[Candidate] = []
    for match in pattern.finditer(line):
        start, end = match.span()
        for name in secret_groups:
            if match.group(name) is not None:
                start, end = match.span(name)
                break
        end = _trim(line, start, end)
        if detector.kind == "USER":
            while end > start and line[end - 1] in ".-":
                end -= 1
        if end <= start:
            continue
        key = _key_of(match, line) if ("k" in groups or "kw" in groups) else ""
        kind = detector.kind_of(match, key) if detector.kind_of else detector.kind
        identity = detector.normalize(line[start:end]) if detector.normalize else line[start:end]
        candidate = Candidate(line, start, end, kind, detector.priority, key, detector.learn, identity)
        for is_false_positive in detector.filters:
            if is_false_positive(candidate):
                break
        else:
            found.append(candidate)
    return found


def _trim(line: str, start: int, end: int) -> int:
    """Drop trailing separators and closing brackets the value did not open (``x='v')`` -> ``v``)."""
    while end > start:
        opener = _OPENER.get(line[end - 1])
        if opener is None or (opener and opener in line[start : end - 1]):
            break
        end -= 1
    return end


def _key_of(match: re.Match[str], line: str) -> str:
    groups = match.re.groupindex
    if "k" in groups and match.group("k") is not None:
        return match.group("k")
    if "kw" in groups and match.group("kw") is not None:
        begin = match.start("kw")
        floor = max(0, begin - 64)
        while begin > floor and line[begin - 1] in _KEY_CHARS:
            begin -= 1
        return line[begin : match.end("kw")]
    return ""


def _select(candidates: list[Candidate]) -> list[Candidate]:
    """Non-overlapping spans, higher priority first, then longer; returned in line order."""
    if len(candidates) == 1:
        return candidates
    candidates.sort(key=lambda c: (-c.priority, c.start - c.end, c.start))
    starts: list[int] = []
    chosen: list[Candidate] = []
    for candidate in candidates:
        at = bisect_left(starts, candidate.start)
        if at > 0 and chosen[at - 1].end > candidate.start:
            continue
        if at < len(chosen) and chosen[at].start < candidate.end:
            continue
        starts.insert(at, candidate.start)
        chosen.insert(at, candidate)
    return chosen
