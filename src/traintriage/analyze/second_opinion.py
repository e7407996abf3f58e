"""When no signature explains a failure: the KB entries whose wording is nearest to it.

The salient lines (exceptions, fatal lines; masked at ingest) are ranked against the KB
by BM25 (match/similar.py). The best entries become candidates with honest, lower
confidence; the best becomes the root cause only when it stands well clear of the
next one, which is what separates a known class in new wording from a class the KB lacks.

Thresholds were chosen on the tuning data (the development corpora and corpus/*-tune) and
checked once on the scored folders. Of the 53 tuning failures that reached this path, 45 were
of classes the KB lacks, so a wrong name costs more here than elsewhere. A lead of at least
`CLEAR_LEAD` with a best score of at least `MIN_SCORE` named the right entry 4 times out of 5
on the tuning part (the fifth was a class the KB lacks) and 2 out of 4 on the scored part
(the other two: classes the KB lacks, which our corpora hold about five times more often
than the logs users bring, per issue 15's own sample). Below a lead of 1.15 the best entry
was right about a third of the time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from traintriage.analyze.observations import Observation
from traintriage.analyze.scoring import Candidate
from traintriage.kb.loader import KnowledgeBase
from traintriage.match.compiler import Scanner

if TYPE_CHECKING:
    from traintriage.match.similar import SimilarityIndex

CLEAR_LEAD = 1.45
MIN_SCORE = 7.0
ROOT_CONFIDENCE = 0.8
TOP = 3
# Confidence of the best entry by its lead over the second, when it is only a candidate
# (raw values; data/calibration.json maps them to how often such a claim was right).
_LEAD_CONFIDENCE = ((1.15, 0.35), (CLEAR_LEAD, 0.5), (float("inf"), 0.6))


@dataclass
class Opinion:
    candidates: list[Candidate]
    confidence: dict[str, float]
    root: Candidate | None


def second_opinion(salient: list[Observation], kb: KnowledgeBase, scanner: Scanner) -> Opinion:
    from traintriage.match.similar import (  # bm25s: only on this path
        query_words,
        similarity_index,
        status_codes,
    )

    words = query_words([o.message for o in salient])
    if not words:
        return Opinion([], {}, None)
    index = similarity_index(kb, scanner)
    ranked = index.rank(words, top=TOP)
    if not ranked:
        return Opinion([], {}, None)
    best = ranked[0][1]
    lead = best / ranked[1][1] if len(ranked) > 1 else float("inf")
    strong = (lead >= CLEAR_LEAD and best >= MIN_SCORE
              and not index.contradicts(ranked[0][0], status_codes([o.message for o in salient])))
    if strong:
        top_confidence = ROOT_CONFIDENCE
    elif best < MIN_SCORE:
        top_confidence = _LEAD_CONFIDENCE[0][1]  # few shared words: a weak hint whatever the lead
    else:
        top_confidence = next((c for limit, c in _LEAD_CONFIDENCE if lead < limit), _LEAD_CONFIDENCE[-1][1])
    candidates: list[Candidate] = []
    confidence: dict[str, float] = {}
    for position, (entry_id, score) in enumerate(ranked):
        lines = _lines_for(entry_id, salient, index)
        share = score / best
        value = top_confidence if position == 0 else min(0.3, top_confidence * share * 0.5)
        candidates.append(Candidate(
            entry_id=entry_id, score=value, nature=kb.entries[entry_id].nature, roots=lines or list(salient[:1]),
            reason=f"wording similar to this entry (BM25 {score:.1f}, {lead:.1f}x the next entry); no signature matched"
            if position == 0 else f"wording similar to this entry (BM25 {score:.1f})"))
        confidence[entry_id] = round(value, 2)
    return Opinion(candidates, confidence, candidates[0] if strong else None)


def _lines_for(entry_id: str, salient: list[Observation], index: SimilarityIndex) -> list[Observation]:
    """The salient lines whose own words point to the entry, most telling first."""
    from traintriage.match.similar import query_words

    scored = []
    for observation in salient:
        score = index.scores(query_words([observation.message])).get(entry_id, 0.0)
        if score > 0:
            scored.append((score, observation))
    scored.sort(key=lambda pair: -pair[0])
    return [o for _, o in scored]
