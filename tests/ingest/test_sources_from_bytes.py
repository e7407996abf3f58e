"""Logs held in memory (an upload): decompressed by name, ranks by name, warnings for what is cut or empty."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from traintriage.errors import BinaryInputError, InputError
from traintriage.ingest.chunks import ReadProblem, iter_chunks
from traintriage.ingest.sources import sources_from_bytes
from traintriage.pipeline import diagnose, diagnose_bytes, run_bytes

TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 7, in <module>\n    step()\n'
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n"
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": lambda data: gzip.compress(data, 1), ".bz2": lambda data: bz2.compress(data, 1),
    ".xz": lambda data: lzma.compress(data, preset=0), ".zst": zstandard.ZstdCompressor(level=1).compress,
}


def _log(steps: int, failure_at: int | None = None) -> bytes:
    lines = []
    for step in range(steps):
        if step == failure_at:
            lines.append(TRACEBACK + OOM)
        lines.append(f"step {step} loss {1 + step % 7 / 10:.2f} lr 3e-4\n")
    return "".join(lines).encode()


def _read(items: list[tuple[str, bytes]]) -> tuple[bytes, list[ReadProblem]]:
    source = sources_from_bytes(items)[0]
    problems: list[ReadProblem] = []
    with source.open() as stream:
        return b"".join(iter_chunks(stream, source.name, problems, chunk_size=1 << 16)), problems


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_each_format_decodes_to_the_original_bytes(suffix: str) -> None:
    data = _log(5000)
    assert _read([(f"train.log{suffix}", COMPRESSORS[suffix](data))]) == (data, [])


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_cut_archive_keeps_what_decoded_and_says_how_much(suffix: str) -> None:
    data = _log(60_000)
    blob = COMPRESSORS[suffix](data)
    text, problems = _read([(f"train.log{suffix}", blob[: len(blob) // 2])])
    assert data.startswith(text)
    assert len(text) > len(data) // 4  # far more than one buffer's worth: the stream was read to its end
    assert len(problems) == 1 and "cut short" in problems[0].message and "read" in problems[0].message


def test_concatenated_gzip_members_are_all_read() -> None:
    first, second = _log(100), _log(50)
    assert _read([("a.log.gz", gzip.compress(first) + gzip.compress(second))]) == (first + second, [])


@pytest.mark.parametrize(("name", "rank"), [("rank3.log", 3), ("logs/attempt_0/5/stderr.log", 5),
                                            ("worker-2.log.gz", 2), ("slurm-884412_5.out", None), ("job.log", None)])
def test_rank_comes_from_a_per_rank_name_only(name: str, rank: int | None) -> None:
    data = gzip.compress(b"hello\n") if name.endswith(".gz") else b"hello\n"
    assert sources_from_bytes([(name, data)])[0].rank == rank


def test_binary_content_is_refused_with_its_name() -> None:
    with pytest.raises(BinaryInputError, match="model.log"):
        sources_from_bytes([("model.log", b"\x7fELF" + bytes(range(256)) * 10)])
    with pytest.raises(BinaryInputError, match="noise.log.gz"):
        sources_from_bytes([("noise.log.gz", gzip.compress(bytes(range(256)) * 100))])


def test_not_an_archive_is_a_clear_input_error() -> None:
    with pytest.raises(InputError, match="cannot decompress"):
        sources_from_bytes([("plain.log.gz", b"this is not gzip data\n" * 10)])


def test_empty_items_are_diagnosed_with_a_warning_naming_them() -> None:
    diagnosis = diagnose_bytes([("empty.log", b""), ("empty.log.zst", b""), ("rank1.log", _log(20))])
    assert diagnosis.status.value == "no-failure"
    assert any("empty.log:" in w and "empty" in w for w in diagnosis.warnings)
    assert any("empty.log.zst" in w for w in diagnosis.warnings)


def test_bytes_and_file_give_the_same_diagnosis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _log(3000, failure_at=2500)
    monkeypatch.chdir(tmp_path)
    path = Path("rank2.log.gz")
    path.write_bytes(gzip.compress(data))
    from_disk = diagnose([str(path)]).to_json_dict()
    in_memory = diagnose_bytes([("rank2.log.gz", path.read_bytes())]).to_json_dict()
    for key in ("status", "root_cause", "initiating_rank", "ranks", "warnings"):
        assert in_memory[key] == from_disk[key], key
    assert in_memory["stats"]["bytes"] == len(data)  # type: ignore[index]


def test_cut_upload_still_finds_the_failure_before_the_cut() -> None:
    blob = gzip.compress(_log(30_000, failure_at=12_000), 1)
    result, _ = run_bytes([("train.log.gz", blob[: len(blob) * 6 // 10])])
    assert result.analysis.root is not None and result.analysis.root.entry_id == "cuda-oom"
    assert any("cut short" in p.message for scan in result.scans for p in scan.problems)
