"""An entry as text for `kb show`, and a plain word search for `kb search`."""

from __future__ import annotations

import re

from traintriage.kb.loader import KnowledgeBase
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
    out.extend(f"  {n}. {s}" for n, s in enumerate(entry.fix.steps, 1))
    for stack, code in entry.fix.code.items():
        out += [f"  [{stack}]"] + [f"    {line}" for line in code.rstrip().splitlines()]
    out += ["", "Verify", f"  {entry.verify}", "", "Prevention"]
    out.extend(f"  - {p}" for p in entry.prevention)
    out += ["", "Signatures"]
    out.extend(f"  {s.role.value:<10} {s.weight:.2f}  {s.pattern}" for s in entry.signatures)
    out += ["", "References"]
    out.extend(f"  - {r.title}: {r.url}" for r in entry.references)
    if entry.related:
        out += ["", f"Related: {', '.join(entry.related)}"]
    return "\n".join(out) + "\n"


def search_entries(kb: KnowledgeBase, text: str) -> list[Entry]:
    """Entries ranked by how many query words they contain; an error line also tries signatures."""
    words = [w for w in re.findall(r"[\w-]+", text.lower()) if len(w) > 2]
    scored: list[tuple[float, str, Entry]] = []
    for entry in kb.entries.values():
        haystack = " ".join([entry.id, entry.title, entry.summary, " ".join(entry.tags)]).lower()
        score = float(sum(1 for w in words if w in haystack))
        if any(_signature_matches(s.pattern, text) for s in entry.signatures):
            score += 10
        if score > 0:
            scored.append((score, entry.id, entry))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [entry for _, _, entry in scored[:15]]


def _signature_matches(pattern: str, text: str) -> bool:
    import re2

    try:
        return re2.search(pattern, text) is not None
    except Exception:  # an invalid pattern is reported by `kb lint`, not here
        return False
