"""A packed tail reads as the list of lines it was made from, and knows without unpacking
whether it holds a clock time or a dated stamp."""

from __future__ import annotations

import pickle

from traintriage.match.scan import CLOCK, DATED, Tail, holds_clock


def test_a_packed_tail_reads_as_its_lines() -> None:
    lines = ["step 1 loss 2.0", "caf\u00e9 \ufffd", "  File \"train.py\", line 3", "last"]
    tail = pickle.loads(pickle.dumps(Tail(lines)))
    assert list(tail) == lines and len(tail) == 4 and bool(tail)
    assert tail[-1] == "last" and tail[-2:] == lines[-2:] and list(reversed(tail)) == lines[::-1]
    assert tail == lines and "\n".join(tail) == "\n".join(lines)
    assert not Tail([]) and list(Tail([])) == [] and Tail([]) == []
    assert list(Tail([""])) == [""]


def test_a_packed_tail_knows_its_clock_times_and_dates() -> None:
    plain = Tail(["step 1 loss 2.0", "Epoch 0: [00:12<01:40, 9.87it/s]"])
    glog = Tail(["E0501 10:12:11.000123 ProcessGroupNCCL.cpp:616] timeout"])
    iso = Tail(["2024-05-01 10:12:11,123 ERROR boom"])
    assert (plain.clock, plain.dated) == (False, False)
    assert (glog.clock, glog.dated) == (True, False)
    assert (iso.clock, iso.dated) == (True, True)


def test_holds_clock_is_clock_search() -> None:
    for text in ("", "12:34:56", "1:2:3", "at 09:00:00Z", "a:12:b", "12:34:5", "x 12:34:56:78"):
        assert holds_clock(text) == (CLOCK.search(text) is not None)
    assert DATED.search("2024-05-01T10:12") and not DATED.search("2024-05-01")
