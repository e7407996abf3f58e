"""The time a source's log last shows (for a hang's 'no progress for N s'): found behind a
trailing traceback in every stamp form the prefix parser reads, and not looked for line by
line in a tail that holds no clock time at all."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from traintriage.match import scan as scanning
from traintriage.match.scan import Tail, last_time

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "train.py", line 88, in <module>',
    "    loss.backward()",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]

STAMPED = [
    ("[2024-05-01 10:02:11,123] [INFO] [engine.py:120] step 40", datetime(2024, 5, 1, 10, 2, 11, 123000, tzinfo=timezone.utc)),
    ("[rank2]:[E304 11:22:44.883102377 ProcessGroupNCCL.cpp:1899] [PG 0 Rank 2] watchdog",
     datetime(1970, 3, 4, 11, 22, 44, 883102, tzinfo=timezone.utc)),
    ("[Wed Mar  4 11:22:41 2026] NVRM: Xid (PCI:0000:3b:00): 79", datetime(2026, 3, 4, 11, 22, 41, tzinfo=timezone.utc)),
    ("Mar 04 11:22:41 gpu-node7 kernel: NVRM: Xid 79", datetime(1970, 3, 4, 11, 22, 41, tzinfo=timezone.utc)),
]


@pytest.mark.parametrize(("line", "expected"), STAMPED)
def test_the_last_stamp_is_found_behind_a_traceback(line: str, expected: datetime) -> None:
    tail = ["step 39 loss 2.1", line, *TRACEBACK]
    assert last_time(tail) == expected.timestamp()
    assert last_time(Tail(tail)) == expected.timestamp()  # packed in a worker: read there


def test_the_latest_of_several_stamps_wins() -> None:
    tail = [STAMPED[0][0], "2024-05-01 10:09:00 step 41", *TRACEBACK]
    assert last_time(tail) == datetime(2024, 5, 1, 10, 9, tzinfo=timezone.utc).timestamp()


def test_a_tail_without_clock_times_parses_no_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(scanning, "parse_prefix", lambda text: calls.append(text))
    tail = ["step 39 loss 2.1 | lr 3e-4 | 12.5 it/s 00:12<01:40", *TRACEBACK] * 8
    assert last_time(tail) is None and last_time(Tail(tail)) is None
    assert calls == []
