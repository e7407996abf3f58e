"""Log lines (numbered by `\\n`) to editor lines (which also end at a lone `\\r`)."""

from __future__ import annotations

from traintriage.lsp.positions import Place, editor_places, unit_counter

UTF16 = unit_counter(None)


def test_plain_lines_map_one_to_one() -> None:
    text = "a\nbb\nccc\n"
    assert editor_places(text, [3, 1], UTF16) == {1: Place(0, 0, 1), 3: Place(2, 2, 3)}


def test_lone_carriage_returns_shift_later_lines_and_crlf_does_not() -> None:
    text = "p 1%\rp 50%\rp 100%\r\nerror here\r\nlast\r"
    places = editor_places(text, [1, 2, 3], UTF16)
    assert places[1] == Place(0, 2, len("p 100%"))
    assert places[2] == Place(3, 3, len("error here"))
    assert places[3] == Place(4, 5, 0)  # a final lone \r ends one more (empty) editor line


def test_lines_beyond_the_text_are_left_out() -> None:
    assert editor_places("one\ntwo", [2, 3, 0], UTF16) == {2: Place(1, 1, 3)}


def test_units_follow_the_negotiated_encoding() -> None:
    line = "loss nan \N{FIRE}"
    assert editor_places(line, [1], UTF16)[1].end_units == len(line) + 1  # a surrogate pair
    assert editor_places(line, [1], unit_counter("utf-32"))[1].end_units == len(line)
    assert editor_places(line, [1], unit_counter("utf-8"))[1].end_units == len(line.encode())
