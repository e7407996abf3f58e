"""`Masker.changed_lines` walks only the lines something hits; it must change exactly the
lines `mask_lines` changes, to the same text, placeholder numbers included, and leave the
masker in the same state for the chunks after."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.mask.test_mask_property import _line_starts, _state_lines, log_text
from traintriage.ingest.mask import Masker


def _raw_line(chunk: bytes, start: int) -> bytes:
    end = chunk.find(b"\n", start)
    return chunk[start : end if end >= 0 else len(chunk)]


@settings(max_examples=300, deadline=None)
@given(st.lists(log_text, min_size=1, max_size=3), st.data())
def test_changed_lines_are_the_lines_mask_lines_changes(chunks: list[bytes], data: st.DataObject) -> None:
    every, changed, given_ends = Masker(), Masker(), Masker()
    for chunk in (c + b"\n" for c in chunks):
        starts = _line_starts(chunk)
        wanted = data.draw(st.lists(st.sampled_from(starts), unique=True)) if starts else []
        state = _state_lines(chunk)
        expected = {start: text for start, text in every.mask_lines(chunk, wanted, state).items()
                    if text != _raw_line(chunk, start)}
        assert changed.changed_lines(chunk, wanted, state) == expected
        # the scanner passes each wanted line's end along; stretches of lines are scanned whole
        ends = {start: start + len(_raw_line(chunk, start)) for start in wanted}
        assert given_ends.changed_lines(chunk, ends, state) == expected
    assert changed.placeholder_digests(b"k" * 32) == every.placeholder_digests(b"k" * 32)
    assert given_ends.placeholder_digests(b"k" * 32) == every.placeholder_digests(b"k" * 32)


def test_a_value_learned_on_a_hit_line_is_masked_on_a_later_line_nothing_hits() -> None:
    secret = "Zq8vN3kT1pW6xR2m"
    chunk = (f"PGPASSWORD={secret}\nstep 1 loss 2.0\nretrying with {secret} now\nstep 2 loss 1.9\n").encode()
    starts = _line_starts(chunk)
    masker = Masker()
    got = masker.changed_lines(chunk, set(starts), _state_lines(chunk))
    assert sorted(got) == [starts[0], starts[2]]
    assert secret.encode() not in got[starts[2]]
    assert got == {s: t for s, t in Masker().mask_lines(chunk, starts, _state_lines(chunk)).items()
                   if t != _raw_line(chunk, s)}
