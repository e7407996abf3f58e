"""When no signature explains a failure: the KB entries whose wording is nearest to it.

The salient lines (exceptions, fatal lines; masked at ingest) are ranked against the KB
by BM25 (match/similar.py). The best entries become candidates with honest, lower
confidence; the best becomes the root cause only when it stands well clear of the
next one, which is what separates a known class in new wording from a class the KB lacks.

Thresholds were chosen on the tuning data (the development corpora and corpus/*-tune):
over 152 failures, when the best entry scored at least `CLEAR_LEAD` times the second
(and at least `MIN_SCORE`), it was right 29 times in 30 and never fired on the failures
of classes the KB lacks (a lead of 1.75 was right 50 times in 51, but named a class for
a JAX coordination-service failure the KB lacks); with a lead under 1.15 it was right
about a third of the time. Rechecked at the end of session 5, after about 200 new signatures
had taken over most of the failures this path used to name: a lead of 1.45 (best >= 7) gained 2
right names and lost 3 KB-lacking failures on the tuning part, and did 1 case worse than 2.5 on
the scored part, so the thresholds stay.
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

CLEAR_LEAD = 2.5
MIN_SCORE = 8.0
ROOT_CONFIDENCE = 0.8
NAMED_LEAD = 2.0
NAMED_MIN_SCORE = 12.0
"""A lead between NAMED_LEAD and CLEAR_LEAD names the root too when the best entry shares many words with
the log (BM25 >= NAMED_MIN_SCORE), at the band's lower confidence (0.6). Chosen in session 23 on the tuning
part (2,889 cases; a lower floor of 10 or 8 forced a class on 1 or 2 failures the KB lacks): one more right
name, nothing lost. Checked on the scored part (3,020): 5 more right names, one KB-lacking failure forced."""
TOP = 3
# Confidence of the best entry by its lead over the second, when it is only a candidate
# (accuracy on the tuning data in these bands: 0.38, 0.66, 0.88).
_LEAD_CONFIDENCE = ((1.15, 0.35), (1.5, 0.5), (CLEAR_LEAD, 0.6))


@dataclass
class Opinion:
    candidates: list[Candidate]
    confidence: dict[str, float]
    root: Candidate | None


def second_opinion(salient: list[Observation], kb: KnowledgeBase, scanner: Scanner,
                   refuted: frozenset[str] = frozenset()) -> Opinion:
    """`refuted`: classes the log's own evidence ruled out (analyze/refine.py): offered as candidates, never
    named the root cause."""
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
    clear = lead >= CLEAR_LEAD and best >= MIN_SCORE
    named = clear or (lead >= NAMED_LEAD and best >= NAMED_MIN_SCORE)
    strong = (named and ranked[0][0] not in refuted
              and not index.contradicts(ranked[0][0], status_codes([o.message for o in salient])))
    if strong and clear:
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


ALTERNATIVES = 3
ALTERNATIVE_SCORE = 0.1
"""An alternative's raw score: below every class a signature found, so it only fills the list."""


def alternatives(lines: list[Observation], offered: list[Candidate], kb: KnowledgeBase,
                 scanner: Scanner) -> list[Candidate]:
    """The entries worded nearest to a named failure's lines, as faint alternatives up to ALTERNATIVES.

    A signature's class is usually right, and when it is not the right one is most often a near
    neighbour in wording: on the scored corpora the label came into the top three 33 more times in
    4,644 cases, and the root cause did not change. The caller asks only while fewer are offered."""
    taken = {c.entry_id for c in offered}
    fresh = [c for c in second_opinion(lines, kb, scanner).candidates if c.entry_id not in taken]
    for candidate in fresh:
        candidate.score = ALTERNATIVE_SCORE
    return fresh[:ALTERNATIVES - len(offered)]


HINT_CONFIDENCE = 0.35
"""The most a hint may claim: wording near an entry's, read from lines that do not say what failed."""


def as_hints(opinion: Opinion) -> Opinion:
    """The opinion's candidates as hints only: no root cause, no confidence above HINT_CONFIDENCE."""
    for candidate in opinion.candidates:
        candidate.score = min(candidate.score, HINT_CONFIDENCE)
    return Opinion(opinion.candidates, {k: min(v, HINT_CONFIDENCE) for k, v in opinion.confidence.items()}, None)


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
