"""The encyclopedia's views of the KB: facets and filters, search, system hubs, comparisons,
and the static search index. Search itself is the CLI's (`kb search`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.render import search_entries
from traintriage.kb.schema import Category, Entry, Phase, Role, Severity

# A run's life, in order; each KB phase sits in one stage.
LIFECYCLE: tuple[tuple[str, tuple[Phase, ...]], ...] = (
    ("Setup", (Phase.init,)),
    ("Launch", (Phase.launch,)),
    ("Training step", (Phase.data, Phase.forward, Phase.backward, Phase.optimizer)),
    ("Checkpoint", (Phase.checkpoint,)),
    ("Evaluation", (Phase.eval,)),
    ("Serving", (Phase.serve,)),
    ("Any phase", (Phase.any,)),
)
SEVERITY_ORDER = {s: n for n, s in enumerate(Severity)}
MIN_LITERAL = 4


@dataclass(frozen=True)
class Filters:
    q: str = ""
    category: str = ""
    system: str = ""
    phase: str = ""
    severity: str = ""

    def accepts(self, entry: Entry) -> bool:
        return ((not self.category or entry.category.value == self.category)
                and (not self.system or self.system in entry.systems)
                and (not self.phase or entry.phase.value == self.phase)
                and (not self.severity or entry.severity.value == self.severity))

    @property
    def active(self) -> bool:
        return any((self.q, self.category, self.system, self.phase, self.severity))


def facets(kb: KnowledgeBase) -> dict[str, list[str]]:
    """The values each filter offers; systems most common first."""
    systems = Counter(system for entry in kb.entries.values() for system in entry.systems)
    return {"category": [c.value for c in Category], "system": [s for s, _ in systems.most_common()],
            "phase": [p.value for p in Phase], "severity": [s.value for s in Severity]}


def browse(kb: KnowledgeBase, filters: Filters) -> list[Entry]:
    """Entries that pass the filters: best search match first, else by category and id."""
    if filters.q.strip():
        found = search_entries(kb, filters.q)
    else:
        found = sorted(kb.entries.values(), key=lambda e: (e.category.value, e.id))
    return [entry for entry in found if filters.accepts(entry)]


def systems(kb: KnowledgeBase) -> list[tuple[str, int]]:
    counts = Counter(system for entry in kb.entries.values() for system in entry.systems)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def system_hub(kb: KnowledgeBase, system: str) -> list[tuple[str, list[Entry]]]:
    """The system's entries by lifecycle stage (stages without entries left out), most severe first."""
    mine = [entry for entry in kb.entries.values() if system in entry.systems]
    stages = []
    for label, phases in LIFECYCLE:
        entries = sorted((e for e in mine if e.phase in phases), key=lambda e: (SEVERITY_ORDER[e.severity], e.id))
        if entries:
            stages.append((label, entries))
    return stages


def stage_of(entry: Entry) -> str:
    return next(label for label, phases in LIFECYCLE if entry.phase in phases)


def compare_notes(entries: list[Entry]) -> list[str]:
    """How the compared entries relate: one explains, specializes or lists another."""
    notes = []
    ids = {entry.id for entry in entries}
    for entry in entries:
        for other in sorted(ids & set(entry.explains)):
            notes.append(f"{entry.id} explains {other}: when both match, {other} is collateral.")
        for other in sorted(ids & set(entry.specializes)):
            notes.append(f"{entry.id} specializes {other}: it wins when its own context is in the log.")
    return notes


def distinguishing_signatures(entries: list[Entry]) -> dict[str, list[tuple[str, str]]]:
    """Per entry, its (role, pattern) root and supporting signatures that no other compared
    entry has: what the log must show for this entry rather than the others (an entry that
    specializes another differs by its supporting context)."""
    telling = {entry.id: [(s.role.value, s.pattern) for s in entry.signatures if s.role is not Role.collateral]
               for entry in entries}
    result = {}
    for entry_id, own in telling.items():
        others = {pattern for other, theirs in telling.items() if other != entry_id for _, pattern in theirs}
        result[entry_id] = [(role, pattern) for role, pattern in own if pattern not in others]
    return result


def literals(pattern: str) -> list[str]:
    """Literal runs of a signature, at least MIN_LITERAL bytes of UTF-8 (a word of three CJK characters
    is as specific as a long Latin one), each whole (alternatives and optional parts cut apart): text to
    find verbatim inside a pasted error line, for the static site's search. (`kb.search_index.signature_words`
    gives the words, for BM25.)"""
    runs: list[str] = []
    current: list[str] = []
    index, depth_class = 0, False

    def cut() -> None:
        text = "".join(current).strip()
        if len(text.encode("utf-8")) >= MIN_LITERAL:
            runs.append(text)
        current.clear()

    while index < len(pattern):
        char = pattern[index]
        if depth_class:
            depth_class = char != "]" or pattern[index - 1] == "\\"
        elif char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            if following.isalnum():
                cut()
            else:
                current.append(following)
            index += 1
        elif char in "*?{":
            if current:
                current.pop()
            cut()
            if char == "{":  # a bounded repeat's counts are not text
                closing = pattern.find("}", index)
                index = closing if closing != -1 else index
        elif char == "[":
            cut()
            depth_class = True
        elif char == "(" and pattern.startswith("?", index + 1):  # (?:...), (?i), (?P<name>...)
            cut()
            while index + 1 < len(pattern) and pattern[index] not in ":)>":
                index += 1
        elif char in ".^$+()|":
            cut()
        else:
            current.append(char)
        index += 1
    cut()
    return runs


def search_index(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """What the static site's search reads: per entry its labels, a lowercased text of title,
    summary, symptoms and tags, and its signatures' literal runs (found inside a pasted message)."""
    rows = []
    for entry in sorted(kb.entries.values(), key=lambda e: e.id):
        fragments = sorted({literal.lower() for s in entry.signatures for literal in literals(s.pattern)})
        words = [entry.id, entry.title, entry.summary, *entry.tags, *(s.symptom for s in entry.symptoms)]
        rows.append({"id": entry.id, "title": entry.title, "category": entry.category.value,
                     "phase": entry.phase.value, "severity": entry.severity.value, "systems": list(entry.systems),
                     "summary": entry.summary, "text": " ".join(words).lower(), "literals": fragments})
    return rows
