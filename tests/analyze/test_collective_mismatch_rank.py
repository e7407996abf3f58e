"""TORCH_DISTRIBUTED_DEBUG=DETAIL: every rank reports the collective mismatch with the same words, but
each compares itself with one rank: the rank every report names is the one that disagrees. DDP's check of
the model at construction reads the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

FINGERPRINT = ("CollectiveFingerPrint(SequenceNumber=19, OpType=ALLREDUCE, TensorShape=[{n}], TensorDtypes=Float, "
               "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided (default)))")


def _report(rank: int, other: int, shapes: dict[int, int]) -> list[str]:
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/srv/job/train.py", line 126, in <module>',
        f"[rank{rank}]:     dist.all_reduce(stats)",
        f"[rank{rank}]: RuntimeError: Detected mismatch between collectives on ranks. Rank {rank} is running "
        f"collective: {FINGERPRINT.format(n=shapes[rank])}, but Rank {other} is running collective: "
        f"{FINGERPRINT.format(n=shapes[other])}.Collectives differ in the following aspects: "
        f"  Tensor Tensor shapes: {shapes[rank]}vs {shapes[other]}",
    ]


def _diagnose(tmp_path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)])


def _ddp_check(rank: int, other: int, params: dict[int, int]) -> list[str]:
    """What DDP's construction-time check (reducer.cpp verify_params_across_processes) raises on each rank."""
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/srv/job/train.py", line 88, in <module>',
        f"[rank{rank}]:     model = DDP(model)",
        f"[rank{rank}]: RuntimeError: DDP expects same model across all ranks, but Rank {rank} has {params[rank]} "
        f"params, while rank {other} has inconsistent {params[other]} params.",
    ]



_CHECKS = [(_report, "collective-mismatch"), (_ddp_check, "ddp-model-mismatch")]


@pytest.mark.parametrize(("report", "entry_id"), _CHECKS)
def test_the_rank_every_report_names_disagrees(tmp_path: Path, report, entry_id: str) -> None:  # type: ignore[no-untyped-def]
    sizes = {0: 2, 1: 2, 2: 3, 3: 2}
    lines = report(1, 2, sizes) + report(0, 2, sizes) + report(2, 0, sizes) + report(3, 2, sizes)
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == entry_id
    assert diagnosis.initiating_rank == 2


@pytest.mark.parametrize(("report", "entry_id"), _CHECKS)
def test_two_ranks_name_each_other_and_neither_is_singled_out(tmp_path: Path, report, entry_id: str) -> None:  # type: ignore[no-untyped-def]
    """Which of two ranks runs the other collective or built the other model cannot be read from the log."""
    sizes = {0: 2, 1: 3}
    diagnosis = _diagnose(tmp_path, report(1, 0, sizes) + report(0, 1, sizes))
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == entry_id
    assert diagnosis.initiating_rank is None
