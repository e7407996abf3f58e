"""Masking happens before the scanner: nothing unmasked reaches hits, context or tail, and one
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
