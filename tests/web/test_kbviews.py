"""The encyclopedia's views: literal runs of signatures, search, hubs, comparisons."""

from __future__ import annotations

import pytest

from traintriage.kb.loader import load_kb
from traintriage.web import kbviews


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"(?:CUDA|HIP) out of memory\. Tried to allocate [0-9.]+ ?[KMGT]?i?B", ["CUDA", "out of memory. Tried to allocate"]),
    (r"NCCL error in: .*ncclSystemError", ["NCCL error in:", "ncclSystemError"]),
    (r"Watchdog caught collective operation timeout", ["Watchdog caught collective operation timeout"]),
    (r"exitcode\s*:\s*-9", ["exitcode"]),
    (r"Tried to allocates? \d+", ["Tried to allocate"]),
    (r"\[[\w-]{1,64}:\d{1,10}\] Signal: Aborted \(6\)", ["] Signal: Aborted (6)"]),
])
def test_literals_are_the_fixed_text_of_a_signature(pattern: str, expected: list[str]) -> None:
    assert kbviews.literals(pattern) == expected


def test_a_line_a_signature_matches_contains_one_of_its_literals() -> None:
    """The static site finds an entry when one of its literals is in the pasted message: so
    every example line a root signature matches holds at least one of that signature's literals."""
    import re2

    from traintriage.kb.loader import EXAMPLES_DIR

    checked = 0
    for entry in load_kb().entries.values():
        lines = [line for path in sorted((EXAMPLES_DIR / entry.id).glob("positive-*.log"))
                 for line in path.read_text(errors="replace").splitlines()[:2000]]
        for signature in entry.root_signatures:
            found = [literal.lower() for literal in kbviews.literals(signature.pattern)]
            if not found:
                continue
            compiled = re2.compile(signature.pattern)
            for line in lines:
                if compiled.search(line):
                    checked += 1
                    assert any(literal in line.lower() for literal in found), (entry.id, signature.pattern, line)
    assert checked > 100


def test_filters_and_search_together() -> None:
    kb = load_kb()
    found = kbviews.browse(kb, kbviews.Filters(q="CUDA out of memory. Tried to allocate 2.00 GiB", category="memory"))
    assert found and found[0].id == "cuda-oom" and all(e.category.value == "memory" for e in found)
    everything = kbviews.browse(kb, kbviews.Filters())
    assert len(everything) == len(kb)


def test_system_hub_follows_a_runs_life() -> None:
    kb = load_kb()
    for system, _ in kbviews.systems(kb):
        stages = kbviews.system_hub(kb, system)
        labels = [label for label, _ in stages]
        assert labels == [label for label, _ in kbviews.LIFECYCLE if label in labels]
        assert sum(len(entries) for _, entries in stages) == sum(system in e.systems for e in kb.entries.values())


def test_compare_shows_what_only_each_entry_matches() -> None:
    kb = load_kb()
    pair = [kb.entries["cuda-oom"], kb.entries["cuda-oom-fragmentation"]]
    apart = kbviews.distinguishing_signatures(pair)
    mine = {s.pattern for s in pair[1].signatures}
    theirs = {s.pattern for s in pair[0].signatures}
    assert apart["cuda-oom-fragmentation"] and all(p in mine - theirs for _, p in apart["cuda-oom-fragmentation"])
    assert all(p in theirs - mine for _, p in apart["cuda-oom"])


def test_search_index_has_every_entry_with_its_literals() -> None:
    kb = load_kb()
    rows = kbviews.search_index(kb)
    assert [r["id"] for r in rows] == sorted(kb.entries)
    assert all(r["literals"] == sorted(set(r["literals"])) for r in rows)
    oom = next(r for r in rows if r["id"] == "cuda-oom")
    assert "out of memory. tried to allocate" in oom["literals"]
