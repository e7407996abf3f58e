"""One Hyperscan pass over a whole chunk tells which lines may hold which secrets.

All detectors' prefilter patterns form one database, compiled once per process. Scanning
is done in C over megabytes at a time; Python only groups the reported end offsets into
lines. Learned values (secrets seen once, searched for everywhere after) form a second,
small literal database that is rebuilt when the set grows.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import cast

import hyperscan

from traintriage.ingest.mask.model import Detector

LineHits = dict[int, int]
"""Line start offset -> bitmask of the ids (detector indexes or learned-literal indexes) seen on it."""


class Prefilter:
    """A compiled Hyperscan database and the scratch space one masker scans it with.

    With `shared`, the scratch is this thread's one for the database (the detector database
    is the same for every masker, and a fleet of 20,000 small logs made a masker, hence a
    scratch, per log); a database made for one masker (learned literals) gets its own."""

    def __init__(self, database: hyperscan.Database, *, shared: bool = False) -> None:
        self._database = database
        self._scratch = _thread_scratch(database) if shared else hyperscan.Scratch(database)

    def scan(self, data: bytes | bytearray, hits: LineHits | None = None) -> LineHits:
        """Map every line of ``data`` that some pattern matched to the ids that matched it."""
        ends: list[tuple[int, int]] = []
        append = ends.append

        def on_match(pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
            append((end, pattern_id))

        self._database.scan(cast(bytes, data), match_event_handler=on_match, scratch=self._scratch)  # any buffer
        lines: LineHits = {} if hits is None else hits
        if not ends:
            return lines
        ends.sort()
        line_end = -1
        line_start = 0
        bits = 0
        rfind, find, size = data.rfind, data.find, len(data)
        for end, pattern_id in ends:
            if end > line_end:
                if line_end >= 0:
                    lines[line_start] = lines.get(line_start, 0) | bits
                line_start = rfind(b"\n", 0, end) + 1
                newline = find(b"\n", end)
                line_end = size if newline < 0 else newline
                bits = 0
            bits |= 1 << pattern_id
        lines[line_start] = lines.get(line_start, 0) | bits
        return lines

    def scan_lines(
        self, data: bytes | bytearray, starts: Iterable[int], limit: int | None = None,
        ends: Mapping[int, int] | None = None,
    ) -> LineHits:
        """``scan`` restricted to the lines of ``data[:limit]`` that begin at ``starts``: they
        are scanned together, so a few lines of a big chunk cost a few lines of work. Lines
        that follow each other go in as one slice (a source's last 40 lines are one), and a
        line whose end the caller knows (``ends``: start -> offset of its newline or the
        limit) is not looked up again: on a fleet of small logs the per-line work was most of
        the masker's time."""
        size = len(data) if limit is None else limit
        known = ends or {}
        runs: list[tuple[int, int]] = []  # (first line's start, last line's end) of each stretch
        for start in sorted(starts):
            end = known.get(start)
            if end is None:
                newline = data.find(b"\n", start, size)
                end = size if newline < 0 else newline
            if runs and start == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], end)
            else:
                runs.append((start, end))
        joined_starts: list[int] = []
        offset = 0
        for first, last in runs:
            joined_starts.append(offset)
            offset += last - first + 1
        found = self.scan(b"\n".join(data[first:last] for first, last in runs))
        lines: LineHits = {}
        for at, bits in found.items():
            run = bisect_right(joined_starts, at) - 1
            lines[runs[run][0] + at - joined_starts[run]] = bits
        return lines


_THREADS = threading.local()


def _thread_scratch(database: hyperscan.Database) -> hyperscan.Scratch:
    """This thread's scratch for a long-lived database: Hyperscan refuses one scratch in two
    scans at once, and a server masks several uploads at once in threads of one process."""
    scratches: dict[int, tuple[hyperscan.Database, hyperscan.Scratch]] | None = getattr(_THREADS, "scratches", None)
    if scratches is None:
        scratches = _THREADS.scratches = {}
    held = scratches.get(id(database))
    if held is None or held[0] is not database:
        held = scratches[id(database)] = (database, hyperscan.Scratch(database))
    return held[1]


def _hs_escape(literal: bytes) -> bytes:
    return b"".join(bytes([c]) if chr(c).isalnum() and c < 128 else b"\\x%02x" % c for c in literal)


@lru_cache(maxsize=8)
def detector_database(detectors: tuple[Detector, ...]) -> hyperscan.Database:
    """Compile the prefilter patterns of ``detectors``; pattern id = detector index."""
    expressions: list[bytes] = []
    ids: list[int] = []
    flags: list[int] = []
    for index, detector in enumerate(detectors):
        flag = hyperscan.HS_FLAG_CASELESS if detector.caseless_prefilter else 0
        for pattern in detector.prefilter:
            expressions.append(pattern.encode("ascii"))
            ids.append(index)
            flags.append(flag)
    return _cached_compile(expressions, ids, flags)


def _cached_compile(expressions: list[bytes], ids: list[int], flags: list[int]) -> hyperscan.Database:
    """Compiling the detector database costs ~0.1 s; a small diagnosis must not pay it each
    run, so the serialised database is kept in the KB cache directory, keyed by its patterns."""
    import hashlib
    import os
    from pathlib import Path

    from traintriage.kb.loader import cache_dir, write_cache

    version = getattr(hyperscan, "__version__", "")
    digest = hashlib.sha256(repr((expressions, ids, flags, version, os.uname().machine)).encode()).hexdigest()[:20]
    cached = Path(cache_dir()) / f"mask-{digest}.hsdb"
    try:
        return hyperscan.loadb(cached.read_bytes(), hyperscan.HS_MODE_BLOCK)
    except (OSError, hyperscan.error, TypeError, ValueError):
        pass
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    write_cache(cached, hyperscan.dumpb(database))
    return database


class LiteralFilter:
    """Lines holding any of a few literal values; Hyperscan, or ``bytes.find`` if it refuses them."""

    def __init__(self, literals: Sequence[bytes]) -> None:
        self._literals = list(literals)
        try:
            self._prefilter: Prefilter | None = Prefilter(literal_database(self._literals))
        except hyperscan.error:
            self._prefilter = None

    def scan(self, data: bytes | bytearray) -> LineHits:
        """Line start -> bitmask of the positions (in ``literals``) of the values on that line."""
        if self._prefilter is not None:
            return self._prefilter.scan(data)
        lines: LineHits = {}
        for position, literal in enumerate(self._literals):
            at = data.find(literal)
            while at >= 0:
                start = data.rfind(b"\n", 0, at) + 1
                lines[start] = lines.get(start, 0) | (1 << position)
                at = data.find(literal, at + len(literal))
        return lines


def literal_database(literals: Sequence[bytes]) -> hyperscan.Database:
    """Compile learned values as literals; pattern id = position in ``literals``."""
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    expressions = [_hs_escape(literal) for literal in literals]
    database.compile(
        expressions=expressions,
        ids=list(range(len(expressions))),
        elements=len(expressions),
        flags=[0] * len(expressions),
    )
    return database
