"""Every Python `re` pattern of the package that reads log text is linear by construction.

A static walk (ast) finds each `re.<function>(pattern, ...)` call in the modules that read
log text. Each literal pattern is parsed (the `re` parser) and checked:

- no ambiguous nested repeat: a repeated group whose body can end in a variable-length
  repeat that also matches the body's first character (`(\\d+,?)+`, `(a+)+`) backtracks
  exponentially on a near miss; always refused.
- an unbounded repeat (`*`, `+`, `{n,}`) is allowed only in a module listed in BOUNDED,
  which says on what bounded slice that module's patterns run. A new module, or a
  pattern built at run time in a module not listed, fails until its bound is stated.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from traintriage.ingest.sources import _MAX_NAME
from traintriage.match.scan import CONFIRM_AFTER, CONFIRM_BEFORE, MAX_METRIC_LINE, MAX_TEXT

PACKAGE = Path(__file__).parents[2] / "src" / "traintriage"
LOG_TEXT_PACKAGES = ("analyze", "parse", "ingest", "match", "report")
_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"})

_HIT_TEXT = f"hit, context and tail texts, decoded to at most MAX_TEXT={MAX_TEXT} bytes by scan.decode_line"
BOUNDED: dict[str, str] = {
    "analyze/diff.py": f"one decoded line's message (MAX_TEXT={MAX_TEXT}); whole chunks only through translate",
    "analyze/facts.py": _HIT_TEXT,
    "analyze/ranks.py": _HIT_TEXT,
    "analyze/refine.py": _HIT_TEXT,
    "analyze/salient.py": _HIT_TEXT,
    "analyze/engine.py": _HIT_TEXT,
    "analyze/observations.py": _HIT_TEXT,
    "analyze/timing.py": _HIT_TEXT,
    "parse/environment.py": _HIT_TEXT,
    "parse/torchrun.py": _HIT_TEXT,
    "parse/traceback.py": _HIT_TEXT,
    "parse/prefix.py": _HIT_TEXT + " (its callers: observations, report, diff)",
    "parse/metrics.py": f"sampled metric lines, cut to MAX_METRIC_LINE={MAX_METRIC_LINE} by scan.metric_slice",
    "report/build.py": _HIT_TEXT,
    "report/quote.py": _HIT_TEXT,
    "match/parallel.py": f"placeholders inside hit texts (MAX_TEXT={MAX_TEXT})",
    "match/compiler.py": f"confirm patterns, on a window of {CONFIRM_BEFORE}+{CONFIRM_AFTER} bytes around a hit",
    "ingest/sources.py": f"file names, at most {_MAX_NAME} characters",
    "ingest/mask/filters.py": "one candidate value, or a slice of 16 bytes before / 12 after it",
    "ingest/mask/detectors/keys.py": "one line, anchored at its start (match) over classes that do not overlap",
    "ingest/mask/masker.py": "one learned literal value (re.escape), searched in one line: linear",
    "ingest/mask/model.py": "detector confirm patterns, on the span a detector reported",
}


@dataclass(frozen=True)
class Found:
    module: str
    line: int
    pattern: str | None  # None: built at run time

    def __str__(self) -> str:
        return f"{self.module}:{self.line} {self.pattern!r}"


def _patterns() -> list[Found]:
    found: list[Found] = []
    for package in LOG_TEXT_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            module = path.relative_to(PACKAGE).as_posix()
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                        and node.func.attr in _FUNCTIONS and node.args):
                    continue
                try:
                    value = ast.literal_eval(node.args[0])
                except ValueError:
                    found.append(Found(module, node.lineno, None))
                    continue
                text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                found.append(Found(module, node.lineno, text))
    return found


# -- the pattern analysis --------------------------------------------------------------------

Items = list[tuple[Any, Any]]
_ALL = frozenset(range(256))
_CATEGORIES = {
    sre.CATEGORY_DIGIT: frozenset(range(48, 58)),
    sre.CATEGORY_SPACE: frozenset(b" \t\n\r\f\v"),
    sre.CATEGORY_WORD: frozenset(c for c in range(256) if chr(c).isalnum() or c == 95),
}
_CATEGORIES[sre.CATEGORY_NOT_DIGIT] = _ALL - _CATEGORIES[sre.CATEGORY_DIGIT]
_CATEGORIES[sre.CATEGORY_NOT_SPACE] = _ALL - _CATEGORIES[sre.CATEGORY_SPACE]
_CATEGORIES[sre.CATEGORY_NOT_WORD] = _ALL - _CATEGORIES[sre.CATEGORY_WORD]
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))
_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)


def _charset(op: Any, av: Any, ignore_case: bool) -> frozenset[int]:
    """The characters (as codes below 256) one item can match first."""
    if op is sre.LITERAL:
        chars = {av}
    elif op is sre.NOT_LITERAL:
        return _ALL - {av}
    elif op is sre.ANY:
        return _ALL
    elif op is sre.IN:
        chars = set()
        negate = False
        for kind, value in av:
            if kind is sre.NEGATE:
                negate = True
            elif kind is sre.LITERAL:
                chars.add(value)
            elif kind is sre.RANGE:
                chars.update(range(value[0], min(value[1], 255) + 1))
            elif kind is sre.CATEGORY:
                chars.update(_CATEGORIES.get(value, _ALL))
        result = frozenset(c for c in chars if isinstance(c, int) and c < 256)
        return _ALL - result if negate else result
    else:
        return _ALL
    if ignore_case:
        chars |= {ord(chr(c).swapcase()) for c in chars if isinstance(c, int) and c < 256 and chr(c).isalpha()}
    return frozenset(c for c in chars if isinstance(c, int) and c < 256)


def _first(items: Items, ignore_case: bool) -> tuple[frozenset[int], bool]:
    """(characters a sequence can start with, whether it can match empty)."""
    chars: set[int] = set()
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        if op is sre.SUBPATTERN:
            sub, nullable = _first(list(av[-1]), ignore_case)
        elif op is sre.BRANCH:
            parts = [_first(list(b), ignore_case) for b in av[1]]
            sub = frozenset().union(*(p[0] for p in parts))
            nullable = any(p[1] for p in parts)
        elif op in _REPEATS:
            low, _, body = av
            sub, nullable = _first(list(body), ignore_case)
            nullable = nullable or low == 0
        else:
            sub, nullable = _charset(op, av, ignore_case), False
        chars |= sub
        if not nullable:
            return frozenset(chars), False
    return frozenset(chars), True


def _tail_repeats(items: Items, ignore_case: bool) -> list[frozenset[int]]:
    """Character sets of the variable-length repeats a sequence can end with (all after them optional)."""
    found: list[frozenset[int]] = []
    for op, av in reversed(items):
        if op in _ZERO_WIDTH:
            continue
        if op in _REPEATS:
            low, high, body = av
            if high > low:
                found.append(_first(list(body), ignore_case)[0])
            found.extend(_tail_repeats(list(body), ignore_case))
            if low > 0:
                return found
        elif op is sre.SUBPATTERN:
            found.extend(_tail_repeats(list(av[-1]), ignore_case))
            if not _first(list(av[-1]), ignore_case)[1]:
                return found
        elif op is sre.BRANCH:
            for branch in av[1]:
                found.extend(_tail_repeats(list(branch), ignore_case))
            if not _first([(op, av)], ignore_case)[1]:
                return found
        else:
            return found
    return found


def ambiguous_nesting(pattern: str) -> list[str]:
    """Repeated groups whose iterations can split one text in several ways."""
    parsed = sre_parse.parse(pattern)
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    problems: list[str] = []

    def walk(items: Items) -> None:
        for op, av in items:
            if op in _REPEATS and (av[1] == sre.MAXREPEAT or av[1] > 64):
                body = list(av[2])
                first, nullable = _first(body, ignore_case)
                if nullable or any(first & tail for tail in _tail_repeats(body, ignore_case)):
                    problems.append(str(body)[:80])
            for child in _children(op, av):
                walk(child)

    walk(list(parsed))
    return problems


def unbounded(pattern: str) -> bool:
    """Whether any repeat has no upper bound."""
    return _has_unbounded(list(sre_parse.parse(pattern)))


def _children(op: Any, av: Any) -> list[Items]:
    if op in _REPEATS:
        return [list(av[2])]
    if op is sre.SUBPATTERN:
        return [list(av[-1])]
    if op is sre.BRANCH:
        return [list(branch) for branch in av[1]]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [list(av[1])]
    return []


def _has_unbounded(items: Items) -> bool:
    return any((op in _REPEATS and av[1] == sre.MAXREPEAT) or any(_has_unbounded(c) for c in _children(op, av))
               for op, av in items)


# -- the checks ------------------------------------------------------------------------------

PATTERNS = _patterns()


def test_the_walk_finds_the_patterns() -> None:
    modules = {p.module for p in PATTERNS}
    assert len(PATTERNS) >= 60 and {"analyze/ranks.py", "parse/metrics.py", "match/scan.py"} <= modules


def test_no_ambiguous_nested_repeat() -> None:
    ambiguous = [str(p) for p in PATTERNS if p.pattern is not None and ambiguous_nesting(p.pattern)]
    assert not ambiguous, "nested repeats that can backtrack exponentially"


def test_unbounded_repeats_only_where_the_slice_is_bounded() -> None:
    unstated = [str(p) for p in PATTERNS
                if p.module not in BOUNDED and (p.pattern is None or unbounded(p.pattern))]
    assert not unstated, "state the bounded slice these patterns run on in BOUNDED, or bound the repeats"


@pytest.mark.parametrize(
    ("pattern", "ambiguous"),
    [
        (r"Ranks? ((?:\d+(?:, ?)?)+) failed", True),  # the pattern of issue 13, defect 1
        (r"(a+)+$", True),
        (r"(?:x*)*", True),
        (r"(?:\w+\s?)+:", True),
        (r"(\d{1,7})*x", True),
        (r"Ranks? (\d{1,7}(?:, ?\d{1,7})*),? failed", False),
        (r"\d+(?:\.\d+)*", False),
        (r"^[a-z]+(?:[_ -][a-z]+)*$", False),
        (r"(?:[a-z0-9._-]+/)*", False),
    ],
)
def test_the_check_tells_ambiguous_nesting_apart(pattern: str, ambiguous: bool) -> None:
    assert bool(ambiguous_nesting(pattern)) is ambiguous
