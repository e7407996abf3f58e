"""Inputs: per-rank names, directories, archives, and the inputs that must fail cleanly."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from traintriage.errors import BinaryInputError, InputError, UsageError
from traintriage.ingest.chunks import ReadProblem, iter_chunks
from traintriage.ingest.sources import discover, rank_from_path


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank3.log", 3), ("rank_3.out", 3), ("worker-3.log", 3), ("logs/run/attempt_0/3/stderr.log", 3),
        ("out/1/rank.3/stderr", 3), ("out/1/rank.03/stdout", 3), ("out/rank.12/stderr", 12),
        ("out/prterun-node7-40213@1/rank.2/stdout", 2), ("out/7/rank.x/stderr", None), ("out/1/stderr", None),
        ("slurm-4412-7.out", None), ("slurm-884412_5.out", None), ("job.log", None), ("train.py.log", None),
        ("train_rank_2.stderr.log.gz", 2), ("worker-3.txt", 3), ("logs/proc1_out.log", 1),
        # a combined log named for what one rank did is not that rank's own file
        ("nan-on-rank2-4procs.log", None), ("job-rank1-debug.log", None), ("hang_rank0_ws3_detail.txt", None),
    ],
)
def test_rank_from_file_names(name: str, rank: int | None) -> None:
    assert rank_from_path(name) == rank


def test_directory_of_rank_files_keeps_ranks(tmp_path: Path) -> None:
    for rank in range(3):
        (tmp_path / f"rank{rank}.log").write_text(f"hello from {rank}\n")
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x01")
    sources = discover([str(tmp_path)])
    assert [s.rank for s in sources] == [0, 1, 2]


def test_binary_file_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "core.bin.log"
    path.write_bytes(b"\x7fELF\x00\x00\x01")
    with pytest.raises(BinaryInputError, match="core.bin.log"):
        discover([str(path)])


def test_missing_file_and_no_input() -> None:
    with pytest.raises(InputError, match="no such file"):
        discover(["/nonexistent/x.log"])
    with pytest.raises(UsageError):
        discover([])


def test_truncated_gzip_yields_what_was_readable(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(20000)))
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    source = discover([str(path)])[0]
    problems: list[ReadProblem] = []
    with source.open() as stream:
        text = b"".join(iter_chunks(stream, source.name, problems, chunk_size=4096))
    assert text.startswith(b"line 0\n")
    assert problems and "ends early" in problems[0].message


def test_chunks_end_on_line_breaks_and_cut_endless_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"short\n" + b"x" * 50000 + b"\nlast")
    problems: list[ReadProblem] = []
    with open(path, "rb") as stream:
        chunks = list(iter_chunks(stream, "a.log", problems, chunk_size=1000))
    assert b"".join(chunks) == path.read_bytes()
    assert all(c.endswith(b"\n") for c in chunks[:-1])
    assert any(c.count(b"x") == 50000 for c in chunks), "a long line is kept whole below the cap"


def test_a_line_past_the_cap_is_cut_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from traintriage.ingest import chunks as chunking

    monkeypatch.setattr(chunking, "MAX_LINE", 4000)
    path = tmp_path / "a.log"
    path.write_bytes(b"x" * 10000 + b"\nend\n")
    with open(path, "rb") as stream:
        pieces = list(chunking.iter_chunks(stream, "a.log", [], chunk_size=1000))
    assert b"".join(pieces) == path.read_bytes()
    assert max(len(p) for p in pieces) <= 4000


def test_a_log_with_nul_runs_from_a_crashed_node_is_still_text(tmp_path: Path) -> None:
    path = tmp_path / "rank3.log"
    path.write_bytes(b"step 1 loss 2.0\n" * 200 + b"\x00" * 512 + b"step 2 loss 1.9\n" * 200)
    assert discover([str(path)])[0].rank == 3


def test_pickle_checkpoint_is_binary(tmp_path: Path) -> None:
    path = tmp_path / "model.pt.log"
    path.write_bytes(b"\x80\x02}q\x00(X\x05\x00\x00\x00state" + bytes(range(256)))
    with pytest.raises(BinaryInputError):
        discover([str(path)])


def test_random_bytes_inside_a_valid_archive_are_binary(tmp_path: Path) -> None:
    import random

    path = tmp_path / "noise.log.gz"
    path.write_bytes(gzip.compress(random.Random(1).randbytes(4096)))
    with pytest.raises(BinaryInputError):
        discover([str(path)])


def test_a_log_with_some_invalid_utf8_is_text(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"step 1 loss 2.0 \xff\xfe caf\xe9\n" * 100)
    assert discover([str(path)])


def test_a_job_folder_reads_its_logs_not_its_training_script(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text("step 1 loss 2.0\n")
    (tmp_path / "train.py").write_text('raise RuntimeError("CUDA error: an illegal memory access was encountered")\n')
    (tmp_path / "kernels.cu").write_text('printf("CUDA error: out of memory");\n')
    assert [Path(s.name).name for s in discover([str(tmp_path)])] == ["rank0.log"]
    assert [Path(s.name).name for s in discover([str(tmp_path / "train.py")])] == ["train.py"]


def test_a_log_whose_progress_bar_redraws_with_backspaces_is_text(tmp_path: Path) -> None:
    """Keras' progress bar in a terminal erases its previous line with as many backspaces as it was wide."""
    bar = "".join("\x08" * 60 + f"{step:3d}/100 [{'=' * (step // 4):<25}] - loss: {1.0 / step:.4f}"
                  for step in range(1, 101))
    path = tmp_path / "fit.log"
    path.write_text("Epoch 1/3\n" + bar + "\nEpoch 2/3\n" + bar + "\nEpoch 3/3\n" + bar + "\n")
    assert discover([str(path)])[0].name.endswith("fit.log")
