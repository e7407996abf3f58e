"""Score each KB entry from its signature hits (docs/KB-AUTHORING.md, "Scoring").

score = max root weight + 0.1 x distinct supporting signatures (<= 3)
        + 0.05 x further distinct root signatures (<= 2), capped at 1.
Excludes drop root hits near them (and the entry, when the excluding line is another entry's
root evidence: that class names what happened); `specializes` entries need a supporting hit and
then outrank their generic entry.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from traintriage.analyze.observations import Observation
from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.schema import Nature, Role
from traintriage.match.compiler import PatternKind, Scanner

EXCLUDE_WINDOW = 10
SUPPORT_BONUS = 0.1
EXTRA_ROOT_BONUS = 0.05


@dataclass
class Candidate:
    entry_id: str
    score: float
    nature: Nature
    roots: list[Observation] = field(default_factory=list)
    supporting: list[Observation] = field(default_factory=list)
    reason: str = ""
    signatures: frozenset[str] = frozenset()
    excused: bool = False

    @property
    def first(self) -> Observation | None:
        return min(self.roots, key=lambda o: o.sort_key) if self.roots else None

    @property
    def evidence_kinds(self) -> int:
        """Distinct signatures matched (root and supporting), for ties between equal scores."""
        return len(self.signatures)

    @property
    def first_key(self) -> tuple[float, int, int]:
        first = self.first
        return first.sort_key if first else (float("inf"), 1 << 30, 1 << 30)


class _ExcludeLines:
    """One entry's exclude lines per source, sorted by line: finding those near a hit is a binary
    search, since an error-dense log can hold a hundred thousand of each."""

    def __init__(self, lines: list[Observation]) -> None:
        by_source: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for index, observation in enumerate(lines):
            by_source[observation.hit.source].append((observation.hit.line, index))
        self._lines = lines
        self._sorted = {source: sorted(rows) for source, rows in by_source.items()}

    def near(self, observation: Observation) -> Observation | None:
        """The first exclude line (in log order) within EXCLUDE_WINDOW lines of the observation."""
        rows = self._sorted.get(observation.hit.source)
        if not rows:
            return None
        line = observation.hit.line
        window = rows[bisect_left(rows, (line - EXCLUDE_WINDOW, -1)):bisect_right(rows, (line + EXCLUDE_WINDOW, len(self._lines)))]
        return self._lines[min(index for _, index in window)] if window else None


def score_entries(
    observations: list[Observation], kb: KnowledgeBase, scanner: Scanner, ignored: frozenset[int] | set[int] = frozenset()
) -> dict[str, Candidate]:
    """Candidates from signature hits; lines in `ignored` (exceptions Python swallowed) do not count."""
    table = scanner.table
    roots: dict[str, list[tuple[Observation, int]]] = defaultdict(list)
    supporting: dict[str, list[tuple[Observation, int]]] = defaultdict(list)
    excludes: dict[str, list[Observation]] = defaultdict(list)
    for observation in observations:
        if observation.order in ignored:
            continue
        for pattern in observation.hit.patterns:
            info = table[pattern]
            if info.kind is PatternKind.exclude:
                excludes[info.entry_id].append(observation)
            elif info.kind is PatternKind.signature and info.role is Role.root:
                roots[info.entry_id].append((observation, pattern))
            elif info.kind is PatternKind.signature and info.role is Role.supporting:
                supporting[info.entry_id].append((observation, pattern))

    claimed: dict[int, set[str]] = defaultdict(set)
    for entry_id, hits in roots.items():
        for observation, _ in hits:
            claimed[observation.order].add(entry_id)
    candidates: dict[str, Candidate] = {}
    for entry_id, hits in roots.items():
        nearby = _ExcludeLines(excludes.get(entry_id, []))
        excluders = {o.order: nearby.near(o) for o, _ in hits}
        kept = [(o, p) for o, p in hits if excluders[o.order] is None]
        excused = not kept
        if excused and any(claimed[x.order] - {entry_id} for order, x in excluders.items() if x and x.order != order):
            continue  # another line excuses it and is another class's own evidence, which names what happened
        kept = kept or hits
        entry = kb.entries[entry_id]
        support = supporting.get(entry_id, [])
        if entry.specializes and not support:
            continue
        weights: dict[str, float] = {}
        for _, pattern in kept:
            info = table[pattern]
            weights[info.signature_id] = max(weights.get(info.signature_id, 0.0), info.weight)
        ordered = sorted(weights.values(), reverse=True)
        distinct_support = {table[p].signature_id for _, p in support}
        score = ordered[0] + EXTRA_ROOT_BONUS * min(2, len(ordered) - 1) + SUPPORT_BONUS * min(3, len(distinct_support))
        candidates[entry_id] = Candidate(
            entry_id=entry_id,
            score=min(1.0, score),
            nature=entry.nature,
            roots=_distinct(o for o, _ in kept),  # a line two signatures of the entry match is one line
            supporting=_distinct(o for o, _ in support),
            reason=f"matched {', '.join(sorted(weights))}",
            signatures=frozenset(weights) | distinct_support,
            excused=excused,
        )
    for candidate in list(candidates.values()):
        for generic in kb.entries[candidate.entry_id].specializes:
            if generic in candidates:
                general = candidates[generic]
                candidate.score = max(candidate.score, general.score + 0.01)
                general.score = min(general.score, candidate.score - 0.02)
    return candidates


HINT_FACTOR = 0.5
"""A supporting signature alone is a hint, not a diagnosis: its weight halved stays under the
engine's threshold, so a hint is offered as a candidate and never called the root cause."""


def supporting_hints(
    observations: list[Observation], scanner: Scanner, ignored: frozenset[int] | set[int] = frozenset()
) -> list[Candidate]:
    """Entries only supporting signatures point to (a frame, a warning that comes before the
    failure), best first: when no class explains a failure, often because the paste ends before
    its decisive line, the lines they matched are the best hint left."""
    table = scanner.table
    found: dict[str, Candidate] = {}
    for observation in observations:
        if observation.order in ignored:
            continue
        for pattern in observation.hit.patterns:
            info = table[pattern]
            if info.kind is not PatternKind.signature or info.role is not Role.supporting:
                continue
            hint = found.get(info.entry_id)
            if hint is None:
                hint = found[info.entry_id] = Candidate(entry_id=info.entry_id, score=0.0, nature=Nature.root,
                                                        reason="only supporting lines matched")
            hint.score = max(hint.score, info.weight * HINT_FACTOR)
            hint.roots.append(observation)
            hint.signatures = hint.signatures | {info.signature_id}
    return rank_candidates(found)


def rank_candidates(candidates: dict[str, Candidate]) -> list[Candidate]:
    """Best first: score, then more distinct evidence, then the failure seen first."""
    return sorted(candidates.values(), key=lambda c: (-round(c.score, 3), -c.evidence_kinds, c.first_key, c.entry_id))


def _distinct(observations: Iterable[Observation]) -> list[Observation]:
    """The observations in order, each line once."""
    return list({(o.hit.source, o.hit.line): o for o in observations}.values())
