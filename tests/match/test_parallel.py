"""A file split across workers gives exactly the hits, line numbers and counts of one pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.ingest.sources import discover
from traintriage.kb.schema import Role
from traintriage.match import parallel
from traintriage.match.compiler import PatternKind, load_scanner
from traintriage.match.scan import scan_source


def _log(path: Path) -> Path:
    lines = []
    for step in range(6000):
        lines.append(f"[default{step % 4}]:[rank{step % 4}]: step {step} loss {2.0 + (step % 7) / 10:.3f}")
        if step % 1500 == 7:
            lines.append(f"[default{step % 4}]:[rank{step % 4}]: RuntimeError: CUDA error: an illegal memory access was encountered")
    path.write_text("\n".join(lines) + "\n")
    return path


def supporting_patterns() -> set[int]:
    return {i for i, info in enumerate(load_scanner().table)
            if info.kind is PatternKind.signature and info.role is Role.supporting}


def test_split_scan_matches_single_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = discover([str(_log(tmp_path / "big.log"))])[0]
    single = scan_source(0, source, load_scanner())
    monkeypatch.setattr(parallel, "MIN_BYTES_FOR_PROCESSES", 1)
    monkeypatch.setattr(parallel, "MIN_SPLIT_BYTES", 1)
    split = parallel.scan_sources([source], jobs=3)[0]
    assert split.lines == single.lines == 6004
    # Supporting signatures count by presence and are reported once per scanned window
    # (compiler.table_flags), so only the set of them found is independent of the split.
    supporting = supporting_patterns()
    assert [(h.line, h.text, sorted(set(h.patterns) - supporting)) for h in split.hits] == \
        [(h.line, h.text, sorted(set(h.patterns) - supporting)) for h in single.hits]
    assert {p for h in split.hits for p in h.patterns} & supporting == \
        {p for h in single.hits for p in h.patterns} & supporting != set()
    assert {k: v for k, v in split.counts.items() if k not in supporting} == \
        {k: v for k, v in single.counts.items() if k not in supporting}
    assert [p.line for p in split.metrics] == [p.line for p in single.metrics]


def test_split_points_start_after_newlines(tmp_path: Path) -> None:
    path = _log(tmp_path / "big.log")
    source = discover([str(path)])[0]
    data = path.read_bytes()
    spans = parallel.split_points(source, 4)
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(data[start - 1 : start] == b"\n" for start, _ in spans[1:])
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.parametrize("jobs", [1, 3])
def test_progress_reports_every_byte_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    source = discover([str(_log(tmp_path / "big.log"))])[0]
    monkeypatch.setattr(parallel, "MIN_BYTES_FOR_PROCESSES", 1)
    monkeypatch.setattr(parallel, "MIN_SPLIT_BYTES", 1)
    seen: list[int] = []
    parallel.scan_sources([source], jobs=jobs, on_bytes=seen.append)
    assert sum(seen) == source.size and seen
