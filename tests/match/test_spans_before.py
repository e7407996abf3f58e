"""The lines before a point of a chunk (a hit's context, a source's tail), found with one
`rsplit`: they must be the lines a plain split names, whatever their lengths."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from traintriage.match.scan import _spans_before

line = st.one_of(st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"x")),
                 st.integers(100, 6000).map(lambda n: b"y" * n))


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=60), st.booleans(), st.integers(0, 45), st.data())
def test_spans_before_are_the_last_lines_a_split_names(lines: list[bytes], newline_at_end: bool, count: int,
                                                        data: st.DataObject) -> None:
    chunk = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    starts = [0] + [i + 1 for i, byte in enumerate(chunk) if byte == 10] + [len(chunk) + 1]
    start = data.draw(st.sampled_from(starts))
    expected: list[tuple[int, int]] = []
    position = 0
    for text in chunk[: max(start - 1, 0)].split(b"\n") if start > 0 else []:
        expected.append((position, position + len(text)))
        position += len(text) + 1
    want = expected[-count:] if count else []
    assert _spans_before(chunk, start, count) == want
    assert _spans_before(bytearray(chunk), start, count) == want
