"""An entry as text for `kb show`, and the ranked search of `kb search` (and the web app)."""

from __future__ import annotations

from functools import cache

from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.reporttext import code_snippets, step_text
from traintriage.kb.schema import Entry


def render_entry(entry: Entry) -> str:
    out = [f"{entry.id} — {entry.title}",
           f"category {entry.category.value} · phase {entry.phase.value} · severity {entry.severity.value} · "
           f"usually {entry.nature.value} · {', '.join(entry.systems)}", "", entry.summary, "",
           "Mechanism", f"  {entry.mechanism}", "", "Symptoms"]
    out.extend(f"  - {s.symptom} ({s.why})" for s in entry.symptoms)
    out += ["", "Confirm"]
    out.extend(f"  {n}. {c}" for n, c in enumerate(entry.confirm, 1))
    out += ["", f"Fix: {entry.fix.summary}"]
    out.extend(f"  {n}. {step_text(s)}" for n, s in enumerate(entry.fix.steps, 1))
    for stack, label, text in code_snippets(entry):
        out += [f"  [{stack}{label}]"] + [f"    {line}" for line in text.rstrip().splitlines()]
    out += ["", "Verify", f"  {entry.verify}", "", "Prevention"]
    out.extend(f"  - {p}" for p in entry.prevention)
    out += ["", "Signatures"]
    out.extend(f"  {s.role.value:<10} {s.weight:.2f}  {s.pattern}" for s in entry.signatures)
    out += ["", "References"]
    out.extend(f"  - {r.title}: {r.url}" for r in entry.references)
    if entry.related:
        out += ["", f"Related: {', '.join(entry.related)}"]
    return "\n".join(out) + "\n"


MAX_RESULTS = 15
ROOT_MATCH = 2.0
"""Added to a BM25 score normalised to 1 for the best entry: a query that a root signature
matches (an error message pasted whole) puts that entry first. Supporting and collateral
signatures add nothing: their lines are another failure's own words."""


def search_entries(kb: KnowledgeBase, text: str) -> list[Entry]:
    """Entries best first: BM25 over titles, summaries, symptoms and signature words, and
    the entries whose signatures match the text itself."""
    from traintriage.kb.schema import Role
    from traintriage.kb.search_index import search_index

    index = search_index(kb)
    scores = index.scores(text)
    best = max(scores.values(), default=0.0) or 1.0
    ranked = {entry_id: score / best for entry_id, score in scores.items()}
    for entry in index.entries:
        if any(s.role is Role.root and _signature_matches(s.pattern, text) for s in entry.signatures):
            ranked[entry.id] = ranked.get(entry.id, 0.0) + ROOT_MATCH
    order = sorted(ranked, key=lambda entry_id: (-ranked[entry_id], entry_id))
    return [kb.entries[entry_id] for entry_id in order[:MAX_RESULTS]]


@cache
def _compiled(pattern: str) -> object | None:
    import re2

    try:
        compiled: object = re2.compile(pattern)
    except Exception:  # an invalid pattern is reported by `kb lint`, not here
        return None
    return compiled


def _signature_matches(pattern: str, text: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(text) is not None  # type: ignore[attr-defined]
