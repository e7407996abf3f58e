"""A log whose last line stops inside a failure message still names the message's entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.ingest.sources import Source
from traintriage.match.compiler import load_scanner
from traintriage.match.cut_line import MIN_CUT, CutLineIndex, leading_literal, openings_of
from traintriage.match.scan import SourceScan, scan_source
from traintriage.pipeline import diagnose


def _scan(tmp_path: Path, text: str) -> SourceScan:
    path = tmp_path / "job.log"
    path.write_text(text)
    return scan_source(0, Source(name="job.log", path=path, size=path.stat().st_size), load_scanner())


@pytest.mark.parametrize(
    ("regex", "literal"),
    [
        (r"Some NCCL operations have failed\. Due to \d+", ("Some NCCL operations have failed. Due to ", False)),
        (r"(?i)\bCUDA Out of memory", ("cuda out of memory", True)),
        (r"exits with return code = -9", ("exits with return code = -9", False)),
        (r"Killed processes? \d+", ("Killed processe", False)),
        (r"(?:a|b) failed", None),
        (r"\d+ failed", None),
        (r"[Ee]rror: x", ("error: x", True)),
        (r"[Cc]u[Dd][Nn][Nn] error: CUDNN_", ("cudnn error: cudnn_", True)),
        (r"[Ea]rror: x", None),
        (r"[Ee]?rror: x", None),
    ],
)
def test_the_opening_literal_stops_at_the_first_class_group_or_optional_character(
        regex: str, literal: tuple[str, bool] | None) -> None:
    assert leading_literal(regex) == literal


def _long_openings() -> list[tuple[int, str, str]]:
    scanner = load_scanner()
    index = scanner.cut_line_index()
    return [(o.pattern, o.entry_id, o.literal) for o in index.openings if not o.caseless]


def test_every_long_opening_cut_three_quarters_in_is_named_unless_another_entry_opens_alike() -> None:
    openings = _long_openings()
    assert len(openings) > 100
    index = load_scanner().cut_line_index()
    for pattern, entry_id, literal in openings:
        cut = literal[: max(MIN_CUT, len(literal) * 3 // 4)].rstrip()
        if not MIN_CUT <= len(cut) < len(literal):
            continue
        found = index.signatures_cut_in(f"[rank3]:[E0506 10:00:00.1 x.cpp:9] {cut}")
        sharing = {e for _, e, other in openings if other.startswith(cut)}
        if len(sharing) == 1:
            assert pattern in found, (entry_id, cut)
        else:
            assert found == [], (entry_id, cut, sharing)


def test_a_short_cut_a_whole_line_or_a_line_that_goes_on_is_not_a_cut() -> None:
    index = CutLineIndex(openings_of([(7, "nccl-watchdog-timeout",
                                       r"Some NCCL operations have failed or timed out\. Due to the asy")]))
    message = "Some NCCL operations have failed or timed out. Due to the asy"
    assert index.signatures_cut_in("[Rank 5] " + message[:40]) == [7]
    assert index.signatures_cut_in("[Rank 5] " + message[: MIN_CUT - 1]) == []
    assert index.signatures_cut_in("[Rank 5] " + message) == []
    assert index.signatures_cut_in("[Rank 5] " + message[:40] + " and more words") == []


def test_a_message_two_entries_open_with_is_named_by_neither() -> None:
    index = CutLineIndex(openings_of([(1, "a", "RuntimeError: the collective operation failed on rank 1 because of A"),
                                      (2, "b", "RuntimeError: the collective operation failed on rank 1 because of B")]))
    assert index.signatures_cut_in("RuntimeError: the collective operation failed on ra") == []
    assert index.signatures_cut_in("RuntimeError: the collective operation failed on rank 1 because of") == []


def test_only_the_last_line_of_the_log_is_read_as_cut(tmp_path: Path) -> None:
    cut = "[rank1]:[E0506 ProcessGroupNCCL.cpp:681] [Rank 1] Some NCCL operations have failed or timed out. Due to the asy"
    at_end = _scan(tmp_path, "step 1 loss 2.0\nstep 2 loss 1.9\n" + cut + "\n\n")
    assert [hit.line for hit in at_end.hits if any(load_scanner().table[p].entry_id == "nccl-watchdog-timeout"
                                                  for p in hit.patterns)] == [3]
    in_middle = _scan(tmp_path, cut + "\nstep 3 loss 1.8\nstep 4 loss 1.7\n")
    assert not any(load_scanner().table[p].entry_id == "nccl-watchdog-timeout" for hit in in_middle.hits
                   for p in hit.patterns)


@pytest.mark.parametrize(("paste", "entry"), [
    ("Map (num_proc=8):  41%|####      | 4100/10000 [12:00<17:15, 5.70 examples/s]\n"
     "[rank2]:[E1203 11:02:03.000000000 ProcessGroupNCCL.cpp:681] [Rank 2] Some NCCL operations "
     "have failed or timed out. Due to the asynch", "nccl-watchdog-timeout"),
    # the signature spells `[Cc][Uu][Dd][Nn][Nn] [Ee]rror: CUDNN_STATUS_INTERNAL_ERROR`: either case opens it
    ("  File \"/usr/lib/python3/site-packages/torch/nn/modules/rnn.py\", line 691, in forward\n"
     "    result = _VF.lstm(input, hx, self._flat_weights, self.bias, self.num_layers,\n"
     "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERRO", "cudnn-internal-error"),
])
def test_a_paste_cut_inside_a_message_is_diagnosed_as_its_entry(tmp_path: Path, paste: str, entry: str) -> None:
    path = tmp_path / "paste.log"
    path.write_text(paste)
    report = diagnose([str(path)], jobs=1)
    assert report.root_cause is not None and report.root_cause.id == entry
