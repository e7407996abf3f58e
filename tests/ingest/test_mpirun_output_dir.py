"""Open MPI `mpirun --output-filename DIR` writes one folder per rank (`DIR/<job>/rank.N/stdout`,
`stderr`); the rank in the folder name is the rank of every line in it that names none."""

from __future__ import annotations

from pathlib import Path

from traintriage.ingest.sources import discover
from traintriage.pipeline import diagnose

_STEPS = "".join(f"step {i} loss 2.{i}\n" for i in range(5))
_CRASH = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 40, in <module>\n'
    "    loss.backward()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)


def _write_output_dir(root: Path, job: str, crashing_rank: int, ranks: int = 4) -> None:
    for rank in range(ranks):
        folder = root / job / f"rank.{rank}"
        folder.mkdir(parents=True)
        (folder / "stdout").write_text(_STEPS)
        (folder / "stderr").write_text(_CRASH if rank == crashing_rank else "")


def test_open_mpi_4_job_folders_give_each_file_its_rank(tmp_path: Path) -> None:
    _write_output_dir(tmp_path, "1", crashing_rank=2)
    ranks = {Path(s.name).relative_to(tmp_path).as_posix(): s.rank for s in discover([str(tmp_path)])}
    assert ranks["1/rank.2/stderr"] == 2
    assert ranks["1/rank.3/stdout"] == 3


def test_the_crashing_rank_folder_names_the_initiating_rank(tmp_path: Path) -> None:
    _write_output_dir(tmp_path, "prterun-node7-40213@1", crashing_rank=2)
    diagnosis = diagnose([str(tmp_path)])
    assert diagnosis.root_cause is not None
    assert diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 2
