"""Lines near anchors, found by binary search: an error-dense log holds hundreds of thousands of
both, so the windows must give the answers a scan of every anchor would."""

from __future__ import annotations

from traintriage.analyze.observations import Observation
from traintriage.analyze.salient import after_an_anchor
from traintriage.match.scan import LineHit


def _at(source: int, line: int, order: int = 0) -> Observation:
    return Observation(hit=LineHit(source=source, line=line, text="x", patterns=[]), source_name=f"log{source}",
                       rank=None, host=None, time=None, message="x", order=order)


def test_a_line_follows_an_anchor_of_its_own_source_within_the_span() -> None:
    follows = after_an_anchor([_at(0, 100), _at(0, 10), _at(1, 500)], within=30)
    assert follows(_at(0, 10)) and follows(_at(0, 40)) and follows(_at(0, 130))
    assert not follows(_at(0, 9)) and not follows(_at(0, 41)) and not follows(_at(0, 131))
    assert follows(_at(1, 520)) and not follows(_at(1, 499))
    assert not follows(_at(2, 100))


def test_no_anchor_excuses_nothing() -> None:
    assert not after_an_anchor([], within=30)(_at(0, 1))
