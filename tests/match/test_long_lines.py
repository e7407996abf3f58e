"""Very long lines: every hit on them is decided from the line's bounds and a capped window,
with the same answers as on short lines."""

from __future__ import annotations

import io
from pathlib import Path

from traintriage.ingest.sources import Source
from traintriage.match.compiler import PatternKind, load_scanner
from traintriage.match.internal import Internal
from traintriage.match.scan import CONFIRM_BEFORE, scan_source


def _scan(tmp_path: Path, text: str, chunk_size: int = 1 << 20) -> object:
    path = tmp_path / "run.log"
    path.write_text(text)
    source = Source(name="run.log", path=path, size=path.stat().st_size)
    return scan_source(0, source, load_scanner(), chunk_size=chunk_size)


def _nonfinite_ids() -> set[int]:
    table = load_scanner().table
    return {i for i, p in enumerate(table) if p.kind is PatternKind.internal and p.internal is Internal.metric_nonfinite}


def test_a_line_of_many_hits_is_one_hit_with_every_match_counted(tmp_path: Path) -> None:
    scan = _scan(tmp_path, "step 1 ok\n" + "RuntimeError: x " * 50_000 + "\nstep 2 ok\nRuntimeError: second\n")
    lines = sorted({hit.line for hit in scan.hits})  # type: ignore[attr-defined]
    assert lines == [2, 4]
    counted = max(scan.counts.values())  # type: ignore[attr-defined]
    assert counted >= 50_001  # each match on the long line still counts


def test_a_printed_tensor_of_nans_is_not_a_nonfinite_loss(tmp_path: Path) -> None:
    scan = _scan(tmp_path, "step 10 loss 2.31\ntensor([" + "nan, " * 100_000 + "nan])\n")
    ids = _nonfinite_ids()
    assert not [hit for hit in scan.hits if ids & set(hit.patterns)]  # type: ignore[attr-defined]


def test_a_nan_loss_far_into_a_long_line_is_confirmed_at_its_hit(tmp_path: Path) -> None:
    padding = "x" * (CONFIRM_BEFORE * 20)
    scan = _scan(tmp_path, "step 10 loss 2.31\n" + padding + " | step 11 loss: nan | " + padding + "\n")
    ids = _nonfinite_ids()
    hits = [hit for hit in scan.hits if ids & set(hit.patterns)]  # type: ignore[attr-defined]
    assert [hit.line for hit in hits] == [2]


def test_hits_are_the_same_whatever_the_chunk_size(tmp_path: Path) -> None:
    text = io.StringIO()
    for step in range(400):
        text.write(f"step {step} loss {'nan' if step == 301 else '1.5'}\n")
        if step % 50 == 0:
            text.write("RuntimeError: boom " * 300 + "\n")
    small = _scan(tmp_path, text.getvalue(), chunk_size=4096)
    large = _scan(tmp_path, text.getvalue(), chunk_size=1 << 22)
    assert [(h.line, h.patterns) for h in small.hits] == [(h.line, h.patterns) for h in large.hits]  # type: ignore[attr-defined]
    assert dict(small.counts) == dict(large.counts)  # type: ignore[attr-defined]
