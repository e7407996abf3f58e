"""`traintriage diff GOOD BAD`: what the failed run says that the good run never said.

Lines are reduced to templates (numbers, hex ids, addresses, paths with numbers
masked, as log-template miners do), so step counters and timestamps do not make every
line "new". Templates only in the bad run are ranked: error lines, then changed
versions and configuration (compared with their values), then warnings, then the rest; a line a KB signature
recognises ranks above all.
"""

from __future__ import annotations

import re
from collections import OrderedDict
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


def collect(sources: list[Source], mask: bool = True) -> OrderedDict[str, Template]:
    """Templates of every (masked) line, first occurrence kept; bounded like an LRU cache."""
    from traintriage.ingest.mask import Masker

    templates: OrderedDict[str, Template] = OrderedDict()
    problems: list[ReadProblem] = []
    masker = Masker() if mask else None
    for source in sources:
        number = 0
        stream = source.open()
        try:
            for raw_chunk in iter_chunks(stream, source.name, problems):
                chunk = masker.mask_chunk(raw_chunk) if masker is not None else raw_chunk
                if b"\x1b" in chunk:
                    chunk = ANSI_ESCAPE.sub(b"", chunk)
                for raw in chunk.split(b"\n"):
                    number += 1
                    if not raw.strip():
                        continue
                    text = decode_line(raw)
                    message = parse_prefix(text).message
                    kind = classify(message)
                    key = message.strip() if kind in _VALUED else template_of(message)
                    found = templates.get(key)
                    if found is not None:
                        found.count += 1
                        continue
                    if len(templates) >= MAX_TEMPLATES:
                        templates.popitem(last=False)
                    templates[key] = Template(key, kind, 1, text, source.name, number)
        finally:
            if source.path is not None:
                stream.close()
    return templates


def diff_runs(good: list[str], bad: list[str], limit: int = 30, mask: bool = True) -> list[Template]:
    good_templates = collect(discover(good), mask)
    bad_templates = collect(discover(bad), mask)
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
