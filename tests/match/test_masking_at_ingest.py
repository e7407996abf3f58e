"""Masking at ingest: nothing unmasked reaches hits, context, curve samples or tail, and one
value gets one placeholder across rank files and across the shares of a split file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traintriage.match import parallel
from traintriage.pipeline import run

KEY_BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKB",
            "xIa9Zq3sQ2ks8mJ4u0Xb1v1lYtT9oWcSd3cN7L5kMhGxFqZ0eTfJ2p8yRz4Wd6Kq"]


def _pem_then_crash(rank: int) -> str:
    return "\n".join([
        f"[rank{rank}]: loading credentials from /home/alice/.ssh/deploy",
        "-----BEGIN PRIVATE KEY-----", *KEY_BODY, "-----END PRIVATE KEY-----",
        f"[rank{rank}]: NCCL INFO Bootstrap : Using eth0:10.20.30.40<0>",
        f"[rank{rank}]: RuntimeError: CUDA error: an illegal memory access was encountered (peer 10.20.30.40)",
    ]) + "\n"


def _all_text(result: object) -> str:
    scans = result.scans  # type: ignore[attr-defined]
    parts = []
    for scan in scans:
        parts.extend(scan.tail)
        for hit in scan.hits:
            parts += [hit.text, *hit.before, *hit.after]
    return "\n".join(parts)


def test_no_secret_reaches_hits_context_or_tail(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(_pem_then_crash(0))
    (tmp_path / "rank1.log").write_text(_pem_then_crash(1))
    result, _ = run([str(tmp_path)])
    text = _all_text(result)
    assert "illegal memory access" in text
    assert not any(body in text for body in KEY_BODY)
    assert "10.20.30.40" not in text and "alice" not in text
    placeholders = set(re.findall(r"<IP-\d+>", text))
    assert placeholders == {"<IP-1>"}, "the same address must get the same placeholder in both rank files"


def test_split_file_shares_one_numbering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = []
    for block in range(400):
        lines.append(f"[rank{block % 4}]: step {block} loss 2.0 from 10.0.0.{block % 3 + 1}")
    lines.append("[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered on 10.0.0.2")
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(parallel, "MIN_BYTES_FOR_PROCESSES", 1)
    monkeypatch.setattr(parallel, "MIN_SPLIT_BYTES", 1)
    split, _ = run([str(path)], jobs=3)
    single, _ = run([str(path)], jobs=1)
    assert [h.text for s in split.scans for h in s.hits] == [h.text for s in single.scans for h in s.hits]


def test_state_learned_chunks_earlier_masks_later_hits_context_and_samples(tmp_path: Path) -> None:
    """Only kept lines are masked, chunk by chunk: a password learned under its key many chunks
    before must still be hidden where it later appears bare, in a hit's context, and a curve
    sample must not carry an address."""
    from traintriage.ingest.sources import discover
    from traintriage.match.compiler import load_scanner
    from traintriage.match.scan import scan_source

    secret = "Tr0ub4dor-and-3"
    lines = [f"export DB_PASSWORD={secret}"]
    lines += [f"step {i} loss 2.{i % 10} lr 3e-4 from 10.9.8.{i % 7 + 1}" for i in range(300)]
    lines += [f"retrying with {secret} after the first attempt",
              "RuntimeError: CUDA error: an illegal memory access was encountered"]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    scan = scan_source(0, discover([str(path)])[0], load_scanner(), mask_key=b"k" * 32, chunk_size=4096)
    crash = next(h for h in scan.hits if "illegal memory access" in h.text)
    assert crash.before[-1] == "retrying with <PASSWORD-1> after the first attempt"
    kept = "\n".join([*scan.tail, *(t for h in scan.hits for t in [h.text, *h.before, *h.after]),
                      *(p.text for p in scan.metrics)])
    assert secret not in kept
    assert scan.metrics and not re.search(r"10\.9\.8\.\d", kept)
    assert scan.lines == len(lines)
    assert crash.line == len(lines)


def test_non_finite_values_outside_metrics_do_not_crowd_out_a_nan_loss(tmp_path: Path) -> None:
    """The scanner keys non-finite metrics on the value and confirms the line names a loss or a
    grad norm; unrelated `nan` lines must not fill the hits kept for it."""
    lines = [f"[rank0]: data stats row {i}: mean=nan std=nan (empty shard)" for i in range(400)]
    lines += ["[rank0]: step 10 loss 2.31", "[rank0]: step 11 loss nan", "[rank0]: step 12 loss nan"]
    path = tmp_path / "rank0.log"
    path.write_text("\n".join(lines) + "\n")
    result, _ = run([str(path)])
    from traintriage.match.compiler import load_scanner
    from traintriage.match.internal import Internal

    nonfinite = set(load_scanner().by_internal(Internal.metric_nonfinite))
    flagged = [h.line for s in result.scans for h in s.hits if nonfinite.intersection(h.patterns)]
    assert flagged == [402, 403]


@pytest.mark.parametrize("mask", [True, False])
def test_results_do_not_depend_on_the_chunk_size(tmp_path: Path, mask: bool) -> None:
    """The reader refills one buffer in place; whatever the chunk size, hits, their context,
    line numbers, curve samples and the tail must be the same, and nothing from an earlier fill
    may leak into a shorter last line."""
    from traintriage.ingest.sources import discover
    from traintriage.match.compiler import load_scanner
    from traintriage.match.scan import scan_source

    lines = []
    for i in range(120):
        lines.append(f"[rank{i % 4}]: \x1b[32mstep {i} loss {2.0 - i / 500:.3f}\x1b[0m from 10.1.2.{i % 5 + 1} " + "x" * (i % 90))
        if i % 37 == 0:
            lines.append("[rank1]: Traceback (most recent call last):")
            lines.append(f'[rank1]:   File "/home/jdoe/train.py", line {i}, in step')
    lines.append("[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered")  # no newline
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines))
    source = discover([str(path)])[0]
    key = b"k" * 32 if mask else None

    def summary(chunk_size: int) -> tuple[object, ...]:
        scan = scan_source(0, source, load_scanner(), mask_key=key, chunk_size=chunk_size)
        hits = [(h.line, h.text, tuple(h.before), tuple(h.after), tuple(h.patterns)) for h in scan.hits]
        return scan.lines, hits, [(p.line, p.loss) for p in scan.metrics], scan.tail

    whole = summary(1 << 20)
    assert whole[0] == len(lines)
    assert whole[1][-1][1] == lines[-1].replace("\x1b[32m", "").replace("\x1b[0m", "")
    for chunk_size in (64, 300, 4096):
        assert summary(chunk_size) == whole, chunk_size


def test_a_line_cut_at_the_cap_keeps_the_line_numbers_of_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endless line is read in pieces at the line cap; the pieces are one line of the file,
    so the lines after it keep their real numbers."""
    from traintriage.ingest import chunks
    from traintriage.ingest.sources import discover
    from traintriage.match.compiler import load_scanner
    from traintriage.match.scan import scan_source

    monkeypatch.setattr(chunks, "MAX_LINE", 4096)
    path = tmp_path / "job.log"
    path.write_text("start\n" + "x" * 20000 + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    scan = scan_source(0, discover([str(path)])[0], load_scanner(), chunk_size=1024)
    crash = next(h for h in scan.hits if "illegal memory access" in h.text)
    assert (crash.line, scan.lines) == (3, 3)


def test_a_huge_progress_line_in_the_tail_shows_its_last_state(tmp_path: Path) -> None:
    """Kept lines are clipped to head and tail when huge; a `\\r` progress bar still shows
    where it ended."""
    from traintriage.ingest.sources import discover
    from traintriage.match.compiler import load_scanner
    from traintriage.match.scan import scan_source

    bar = "".join(f"\r{i % 100:3d}%|{'#' * (i % 10)}| {i}/50000" for i in range(50000))
    path = tmp_path / "job.log"
    path.write_text("start\n" + bar + "\r100%|##########| 50000/50000\n")
    scan = scan_source(0, discover([str(path)])[0], load_scanner(), mask_key=b"k" * 32)
    assert scan.tail[-1] == "100%|##########| 50000/50000"
    assert len(path.read_bytes()) > 1 << 20
