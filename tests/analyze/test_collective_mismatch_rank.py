"""TORCH_DISTRIBUTED_DEBUG=DETAIL: every rank reports the collective mismatch with the same words, but
each compares itself with one rank: the rank every report names is the one that disagrees."""

from __future__ import annotations

from pathlib import Path

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


def test_the_rank_every_report_names_disagrees(tmp_path: Path) -> None:
    shapes = {0: 2, 1: 2, 2: 3, 3: 2}
    lines = _report(0, 2, shapes) + _report(1, 2, shapes) + _report(2, 0, shapes) + _report(3, 2, shapes)
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "collective-mismatch"
    assert diagnosis.initiating_rank == 2


def test_two_ranks_name_each_other_and_neither_is_singled_out(tmp_path: Path) -> None:
    shapes = {0: 2, 1: 3}
    diagnosis = _diagnose(tmp_path, _report(0, 1, shapes) + _report(1, 0, shapes))
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "collective-mismatch"
    assert diagnosis.initiating_rank is None


def _ddp_check(rank: int, other: int, params: dict[int, int]) -> list[str]:
    """What DDP's construction-time check (reducer.cpp verify_params_across_processes) raises on each rank."""
    return [
        f"[rank{rank}]: Traceback (most recent call last):",
        f'[rank{rank}]:   File "/srv/job/train.py", line 88, in <module>',
        f"[rank{rank}]:     model = DDP(model)",
        f"[rank{rank}]: RuntimeError: DDP expects same model across all ranks, but Rank {rank} has {params[rank]} "
        f"params, while rank {other} has inconsistent {params[other]} params.",
    ]


def test_the_rank_with_another_model_is_the_one_every_ddp_check_names(tmp_path: Path) -> None:
    params = {0: 9, 1: 9, 2: 11}
    lines = _ddp_check(1, 2, params) + _ddp_check(0, 2, params) + _ddp_check(2, 0, params)
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "ddp-model-mismatch"
    assert diagnosis.initiating_rank == 2


def test_two_ranks_with_different_models_single_out_neither(tmp_path: Path) -> None:
    """Each of two ranks names the other: which one built the other model cannot be read from the log."""
    params = {0: 9, 1: 11}
    diagnosis = _diagnose(tmp_path, _ddp_check(1, 0, params) + _ddp_check(0, 1, params))
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "ddp-model-mismatch"
    assert diagnosis.initiating_rank is None
