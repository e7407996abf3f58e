"""`kb search` ranks the entry an error message belongs to first; bad options and a bare
command get a clear message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import re2

from tests.cli.conftest import Result
from traintriage.kb.loader import load_kb
from traintriage.kb.render import search_entries
from traintriage.kb.schema import Category, Role

Cli = Callable[..., Result]
EXAMPLES = Path(__file__).parents[2] / "src" / "traintriage" / "kb" / "examples"


def _root_line(entry_id: str) -> str | None:
    """The first line of the entry's first positive example that one of its root signatures matches."""
    entry = load_kb().entries[entry_id]
    for example in sorted((EXAMPLES / entry_id).glob("positive*.log"))[:1]:
        for line in example.read_text(errors="replace").splitlines():
            if any(s.role is Role.root and re2.search(s.pattern, line) for s in entry.signatures):
                return line
    return None


def test_an_error_line_from_the_logs_puts_its_entry_first() -> None:
    kb = load_kb()
    ranks: dict[str, int] = {}
    for entry_id in kb.entries:
        line = _root_line(entry_id)
        if line is not None:
            found = [e.id for e in search_entries(kb, line)]
            ranks[entry_id] = found.index(entry_id) if entry_id in found else 99
    assert len(ranks) >= 100
    first = sum(rank == 0 for rank in ranks.values())
    assert first >= 0.95 * len(ranks), sorted(i for i, r in ranks.items() if r)
    assert max(ranks.values()) <= 2  # a line two entries share: the other one first at most


def test_an_entry_title_finds_that_entry_first() -> None:
    """First almost always; a title that quotes another class's error (a KeyboardInterrupt
    that also ends a hang) may put that class first, its own entry next."""
    kb = load_kb()
    ranks = {e.id: [f.id for f in search_entries(kb, e.title)[:3]] for e in kb.entries.values()}
    assert all(entry_id in found for entry_id, found in ranks.items())
    first = sum(found[0] == entry_id for entry_id, found in ranks.items())
    assert first >= 0.97 * len(ranks), sorted(i for i, found in ranks.items() if found[0] != i)


def test_plain_words_rank_the_named_failure_above_neighbours(cli: Cli) -> None:
    result = cli("kb", "search", "CUDA", "out", "of", "memory")
    assert result.code == 0 and result.out.split()[0] == "cuda-oom"


def test_search_without_any_match_says_so(cli: Cli) -> None:
    result = cli("kb", "search", "qwertyuiop")
    assert result.code == 1 and "no entry matches" in result.out


def test_unknown_category_is_one_line_naming_the_valid_ones(cli: Cli) -> None:
    result = cli("kb", "list", "--category", "nope")
    assert result.code == 64 and result.out == ""
    assert result.err.count("\n") == 1 and "nope" in result.err
    assert all(c.value in result.err for c in Category)


def test_bare_command_prints_usage_and_no_empty_error(cli: Cli) -> None:
    result = cli()
    assert "Usage" in result.out + result.err
    assert "traintriage: \n" not in result.err and "error" not in result.err.lower()
