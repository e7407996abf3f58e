"""Compile every KB signature, exclude pattern and internal pattern into one scanner.

Patterns are RE2-subset regular expressions (checked with RE2, which refuses
backreferences and look-around), compiled together into a Hyperscan block-mode
database: one linear-time pass over a chunk reports every pattern's matches.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import threading
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from pathlib import Path

import hyperscan

from traintriage.errors import KnowledgeBaseError
from traintriage.ingest.mask import state_prefilters
from traintriage.kb.loader import KnowledgeBase, cache_dir, kb_cache_key, load_kb, read_cache, write_cache
from traintriage.kb.schema import Role
from traintriage.match import cut_line
from traintriage.match.cut_line import CutLineIndex
from traintriage.match.internal import INTERNAL_PATTERNS, Internal

SIGNATURE_CAP = 4096
SUPPORTING_CAP = 64
CONTEXT_HITS = 6


class PatternKind(str, Enum):
    signature = "signature"
    exclude = "exclude"
    internal = "internal"
    mask_state = "mask-state"


@dataclass(frozen=True)
class PatternInfo:
    """What a Hyperscan pattern id stands for."""

    kind: PatternKind
    regex: str
    cap: int
    context: bool
    entry_id: str = ""
    signature_id: str = ""
    role: Role | None = None
    weight: float = 0.0
    internal: Internal | None = None
    confirm: re.Pattern[bytes] | None = None


@dataclass
class Scanner:
    """The compiled database and what each id means. Ids from `mask_base` on are the masker's
    state prefilters (see `Masker.mask_lines`): riding along in this pass, masking costs no
    second pass over the log."""

    table: list[PatternInfo]
    database: hyperscan.Database
    mask_base: int
    _threads: threading.local = field(default_factory=threading.local, repr=False, compare=False)
    _internal_ids: dict[Internal, list[int]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _cut_index: CutLineIndex | None = field(default=None, init=False, repr=False, compare=False)

    def scratch(self) -> hyperscan.Scratch:
        """This thread's scratch space: Hyperscan refuses one scratch in two scans at once, and a
        server diagnoses several logs at once in threads of one process."""
        scratch = getattr(self._threads, "scratch", None)
        if scratch is None:
            scratch = self._threads.scratch = hyperscan.Scratch(self.database)
        return scratch

    def by_internal(self, kind: Internal) -> list[int]:
        return list(self._internal_ids.get(kind, ()))

    def cut_line_index(self) -> CutLineIndex:
        """The root signatures' opening literals (see cut_line), when a log first asks."""
        if self._cut_index is None:
            self._cut_index = CutLineIndex(cached_openings(self.table))
        return self._cut_index

    def __post_init__(self) -> None:
        """Which ids each internal kind has, once: the engine asks ~20 times per diagnosis."""
        for number, info in enumerate(self.table):
            if info.internal is not None:
                self._internal_ids.setdefault(info.internal, []).append(number)


def pattern_table(kb: KnowledgeBase) -> list[PatternInfo]:
    return kb_patterns(kb) + builtin_patterns()


def kb_patterns(kb: KnowledgeBase) -> list[PatternInfo]:
    """The entries' signatures and excludes, in entry order."""
    table: list[PatternInfo] = []
    for entry in kb.entries.values():
        for sig in entry.signatures:
            table.append(
                PatternInfo(
                    kind=PatternKind.signature,
                    regex=sig.pattern,
                    cap=SUPPORTING_CAP if sig.role is Role.supporting else SIGNATURE_CAP,
                    context=sig.role is Role.root,
                    entry_id=entry.id,
                    signature_id=sig.id,
                    role=sig.role,
                    weight=sig.weight,
                )
            )
        for number, exclude in enumerate(entry.excludes):
            table.append(
                PatternInfo(kind=PatternKind.exclude, regex=exclude, cap=SIGNATURE_CAP, context=False,
                            entry_id=entry.id, signature_id=f"exclude-{number}")
            )
    return table


def builtin_patterns() -> list[PatternInfo]:
    """The scanner's own patterns (internal.py), then the masker's state prefilters."""
    table: list[PatternInfo] = []
    for internal in INTERNAL_PATTERNS:
        table.append(
            PatternInfo(kind=PatternKind.internal, regex=internal.pattern, cap=internal.cap,
                        context=internal.context, internal=internal.kind,
                        confirm=re.compile(internal.confirm.encode()) if internal.confirm else None)
        )
    for pattern, caseless, detector in state_prefilters():
        table.append(
            PatternInfo(kind=PatternKind.mask_state, regex=("(?i)" if caseless else "") + pattern, cap=0,
                        context=False, signature_id=str(detector))
        )
    return table


def cached_kb_patterns() -> tuple[list[PatternInfo], str]:
    """`kb_patterns` of the KB and the digest of their texts and flags, from the on-disk cache
    when the entry files are unchanged: building them reads every entry, and that was a tenth
    of the start-up of a small diagnosis."""
    hasher = hashlib.sha256(kb_cache_key().encode())
    stat = Path(__file__).stat()
    hasher.update(f"{stat.st_size}\0{stat.st_mtime_ns}".encode())
    cached = cache_dir() / f"patterns-{hasher.hexdigest()[:20]}.pickle"
    found = read_cache(cached)
    if isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], list) and isinstance(found[1], str):
        return found
    table = kb_patterns(load_kb())
    digest = patterns_digest(table)
    write_cache(cached, pickle.dumps((table, digest), protocol=pickle.HIGHEST_PROTOCOL))
    return table, digest


def cached_openings(table: list[PatternInfo]) -> list[tuple[int, str, str, bool]]:
    """`openings_of` the table's root signatures, from the on-disk cache when neither the entry files
    nor the code that reads them changed: parsing ~2,000 regexes took a fifth of a small log's diagnosis."""
    hasher = hashlib.sha256(kb_cache_key().encode())
    for module in (__file__, cut_line.__file__):
        stat = Path(module).stat()
        hasher.update(f"{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    cached = cache_dir() / f"openings-{hasher.hexdigest()[:20]}.pickle"
    found = read_cache(cached)
    if isinstance(found, list):
        return found
    openings = cut_line.openings_of([(number, info.entry_id, info.regex) for number, info in enumerate(table)
                                     if info.kind is PatternKind.signature and info.role is Role.root])
    write_cache(cached, pickle.dumps(openings, protocol=pickle.HIGHEST_PROTOCOL))
    return openings


def patterns_digest(table: list[PatternInfo]) -> str:
    """What the compiled database depends on: each pattern's text and flags, in order."""
    return hashlib.sha256("\0".join(f"{p.regex}\1{table_flags(p)[1]}" for p in table).encode()).hexdigest()


def split_flags(regex: str) -> tuple[str, int]:
    """Hyperscan takes case-insensitivity as a flag; accept a leading `(?i)`."""
    flags = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY
    if regex.startswith("(?i)"):
        return regex[4:], flags | hyperscan.HS_FLAG_CASELESS
    return regex, flags


def check_pattern(regex: str) -> str | None:
    """Why a pattern is not acceptable, or None: it must be RE2 and Hyperscan compatible."""
    import re2  # only `kb lint` and a cache miss check patterns; keep it off the start-up path

    try:
        re2.compile(regex)
    except Exception as exc:  # re2 raises its own error type
        return f"not RE2: {exc}"
    body, flags = split_flags(regex)
    try:
        database = hyperscan.Database()
        database.compile(expressions=[body.encode()], ids=[0], elements=1, flags=[flags])
    except hyperscan.error as exc:
        return f"not compilable by Hyperscan: {exc}"
    if re2.compile(regex).search("") is not None:
        return "matches the empty string"
    return None


def table_flags(info: PatternInfo) -> tuple[str, int]:
    """The pattern body and its Hyperscan flags. A supporting signature counts by presence
    alone, so Hyperscan reports it once per scanned window: some name routine lines (NCCL INFO
    lines) that would otherwise call Python on every one of them. The flag does not stop
    Hyperscan's literal matcher from finding each such line, so a supporting signature keyed on a
    line printed thousands of times still costs scan time (`make bench-patterns`)."""
    body, flag = split_flags(info.regex)
    if info.kind is PatternKind.signature and info.role is Role.supporting:
        flag |= hyperscan.HS_FLAG_SINGLEMATCH
    return body, flag


def compile_table(table: list[PatternInfo]) -> hyperscan.Database:
    expressions: list[bytes] = []
    flags: list[int] = []
    for info in table:
        body, flag = table_flags(info)
        expressions.append(body.encode())
        flags.append(flag)
    database = hyperscan.Database()
    try:
        database.compile(expressions=expressions, ids=list(range(len(expressions))),
                         elements=len(expressions), flags=flags)
    except hyperscan.error as exc:
        bad = [f"{i.entry_id or i.internal}: {i.regex}" for i in table if check_pattern(i.regex)]
        raise KnowledgeBaseError(f"cannot compile the scanner: {exc}; bad patterns: {bad[:5]}") from exc
    return database


@cache
def load_scanner() -> Scanner:
    """The compiled scanner, deserialised from the cache when no pattern changed."""
    from_kb, kb_digest = cached_kb_patterns()
    builtin = builtin_patterns()
    table = from_kb + builtin
    mask_base = len(from_kb) + next((i for i, p in enumerate(builtin) if p.kind is PatternKind.mask_state), len(builtin))
    digest = hashlib.sha256(f"{kb_digest}\0{patterns_digest(builtin)}".encode()).hexdigest()[:24]
    cached = cache_dir() / f"scanner-{digest}-{os.uname().machine}.hsdb"
    try:
        database = hyperscan.loadb(Path(cached).read_bytes(), hyperscan.HS_MODE_BLOCK)
        return Scanner(table=table, database=database, mask_base=mask_base)
    except (OSError, hyperscan.error, TypeError, ValueError):
        pass
    database = compile_table(table)
    write_cache(cached, hyperscan.dumpb(database))
    return Scanner(table=table, database=database, mask_base=mask_base)


def matching_patterns(scanner: Scanner, text: str) -> list[int]:
    """Ids of the patterns that match one line of text (for a handful of lines, not a log)."""
    found: list[int] = []

    def on_match(pattern: int, start: int, end: int, flags: int, context: object) -> None:
        if pattern < scanner.mask_base:
            found.append(pattern)

    scanner.database.scan(text.encode("utf-8", "replace"), match_event_handler=on_match, scratch=scanner.scratch())
    return found
