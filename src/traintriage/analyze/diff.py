"""`traintriage diff GOOD BAD`: what the failed run says that the good run never said.

Lines are reduced to templates (numbers, hex ids, addresses, paths with numbers
masked, as log-template miners do), so step counters and timestamps do not make every
line "new". Templates only in the bad run are ranked: error lines, then changed
versions and configuration (compared with their values), then warnings, then the rest; a line a KB signature
recognises ranks above all.

Speed: a run is read once, in large chunks, and Python works per distinct line shape, not
per line. Each line's shape is the line without its digits (one C-level `translate` per
chunk); lines of one shape are counted together, and only the first of each shape is
decoded, stripped of its prefix and reduced to a template. Lines whose kind keeps values
(versions, configuration) are keyed by each distinct text. Memory is bounded by the number
of distinct shapes and templates (both capped), not by the size of the log.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass
from enum import Enum

from traintriage.ingest.chunks import ReadProblem, iter_chunks
from traintriage.ingest.sources import Source, discover
from traintriage.match.scan import ANSI_ESCAPE, decode_line
from traintriage.parse.prefix import parse_prefix

MAX_TEMPLATES = 50_000
_VARIABLE = re.compile(
    r"0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b|\d+(?:\.\d+)*(?:[eE][-+]?\d+)?|"
    r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b"
)
_ERROR = re.compile(r"(?:Error|Exception|FATAL|Traceback|\bfailed\b|\bERROR\b|Killed|Segmentation fault|exitcode)")
_WARNING = re.compile(r"(?:Warning|\bWARN(?:ING)?\b|deprecated)", re.I)
_ENVIRONMENT = re.compile(r"(?:\bversion\b|__version__|CUDA|NCCL_|TORCH_|CUDA_VISIBLE_DEVICES|driver)", re.I)
_CONFIG = re.compile(r"^\s{0,2}['\"]?[A-Za-z_][\w.-]*['\"]?\s*[:=]\s*[^\s(]+,?\s*$")


class Kind(str, Enum):
    error = "error"
    environment = "environment"
    config = "config"
    warning = "warning"
    other = "other"


_VALUED = frozenset({Kind.environment, Kind.config})
_WEIGHT = {Kind.error: 4.0, Kind.environment: 3.0, Kind.config: 2.5, Kind.warning: 2.0, Kind.other: 0.5}


@dataclass
class Template:
    text: str
    kind: Kind
    count: int
    example: str
    source: str
    line: int
    known: str | None = None

    @property
    def score(self) -> float:
        return _WEIGHT[self.kind] + (5.0 if self.known else 0.0)


def template_of(message: str) -> str:
    return _VARIABLE.sub("<*>", message).strip()


def classify(message: str) -> Kind:
    if _ERROR.search(message):
        return Kind.error
    if _WARNING.search(message):
        return Kind.warning
    if _ENVIRONMENT.search(message):
        return Kind.environment
    if _CONFIG.search(message):
        return Kind.config
    return Kind.other


MAX_SHAPE = 4096
MAX_VALUES = 256
"""Distinct texts kept per shape of a valued kind (a version line printed with many values)."""
_DIGITS = b"0123456789"


class _RunTemplates:
    """The templates of one run, built chunk by chunk."""

    def __init__(self) -> None:
        self.templates: OrderedDict[str, Template] = OrderedDict()
        self.shapes: dict[bytes, str | None] = {}  # shape -> template key; None: a valued kind
        self.values: dict[bytes, int] = {}  # distinct texts seen per valued shape

    def add_chunk(self, chunk: bytes, source: str, first_line: int) -> int:
        """Count the lines of `chunk` (whole lines, masked); returns how many lines it held."""
        raw_lines = chunk.split(b"\n")
        if raw_lines and not raw_lines[-1]:
            raw_lines.pop()
        shapes = [line[:MAX_SHAPE] for line in chunk.translate(None, _DIGITS).split(b"\n")[: len(raw_lines)]]
        counts = Counter(shapes)
        first = dict(zip(reversed(shapes), range(len(shapes) - 1, -1, -1), strict=True))
        valued: set[bytes] = set()
        for shape, index in first.items():
            if shape not in self.shapes:
                self._new_shape(shape, raw_lines[index], source, first_line + index)
            key = self.shapes[shape]
            if key is None:
                valued.add(shape)
            elif key and key in self.templates:
                self.templates[key].count += counts[shape]
        if valued:
            for index, (shape, raw) in enumerate(zip(shapes, raw_lines, strict=True)):
                if shape in valued:
                    self._add_valued(shape, raw, source, first_line + index)
        return len(raw_lines)

    def _new_shape(self, shape: bytes, raw: bytes, source: str, number: int) -> None:
        if not shape.strip():
            self._remember(shape, "")
            return
        text = decode_line(raw)
        message = parse_prefix(text).message
        kind = classify(message)
        if kind in _VALUED:
            self._remember(shape, None)
            return
        key = template_of(message)
        self._remember(shape, key)
        if key and key not in self.templates:
            self._add(Template(key, kind, 0, text, source, number))  # counted with its shape's lines

    def _add_valued(self, shape: bytes, raw: bytes, source: str, number: int) -> None:
        text = decode_line(raw)
        message = parse_prefix(text).message
        key = message.strip()
        found = self.templates.get(key)
        if found is not None:
            found.count += 1
        elif self.values.get(shape, 0) < MAX_VALUES:
            self.values[shape] = self.values.get(shape, 0) + 1
            self._add(Template(key, classify(message), 1, text, source, number))

    def _remember(self, shape: bytes, key: str | None) -> None:
        if len(self.shapes) >= MAX_TEMPLATES:
            evicted = next(iter(self.shapes))
            del self.shapes[evicted]
            self.values.pop(evicted, None)
        self.shapes[shape] = key

    def _add(self, template: Template) -> None:
        if len(self.templates) >= MAX_TEMPLATES:
            self.templates.popitem(last=False)
        self.templates[template.text] = template


def collect(sources: list[Source], mask: bool = True, problems: list[ReadProblem] | None = None) -> OrderedDict[str, Template]:
    """Templates of every (masked) line, first occurrence kept; bounded like an LRU cache."""
    from traintriage.ingest.mask import Masker

    run = _RunTemplates()
    problems = problems if problems is not None else []
    masker = Masker() if mask else None
    for source in sources:
        number = 1
        with source.open() as stream:
            for raw_chunk in iter_chunks(stream, source.name, problems):
                chunk = masker.mask_chunk(raw_chunk) if masker is not None else raw_chunk
                if b"\x1b" in chunk:
                    chunk = ANSI_ESCAPE.sub(b"", chunk)
                number += run.add_chunk(chunk, source.name, number)
        if number == 1 and not any(p.message.startswith(f"{source.name}:") for p in problems):
            problems.append(ReadProblem(f"{source.name}: empty input (0 bytes), nothing to compare"))
    return run.templates


def diff_runs(
    good: list[str], bad: list[str], limit: int = 30, mask: bool = True, warnings: list[str] | None = None
) -> list[Template]:
    """New templates of the bad run, most suspicious first; what could not be read (empty,
    cut or skipped inputs) is added to `warnings`."""
    notes = warnings if warnings is not None else []
    problems: list[ReadProblem] = []
    good_templates = collect(discover(good, notes), mask, problems)
    bad_templates = collect(discover(bad, notes), mask, problems)
    notes.extend(p.message for p in problems)
    new = [t for key, t in bad_templates.items() if key not in good_templates]
    _mark_known(new)
    new.sort(key=lambda t: (-t.score, t.source, t.line))
    return new[:limit]


def _mark_known(templates: list[Template]) -> None:
    """Name the KB class a new line belongs to, when a root signature recognises it."""
    from traintriage.kb.schema import Role
    from traintriage.match.compiler import PatternKind, load_scanner, matching_patterns

    scanner = load_scanner()
    for template in templates:
        if template.kind is Kind.other:
            continue
        for pattern in matching_patterns(scanner, template.example):
            info = scanner.table[pattern]
            if info.kind is PatternKind.signature and info.role is Role.root:
                template.known = info.entry_id
                break
