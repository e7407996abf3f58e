"""torchrun's failure summary names the first failure under `Root Cause (first observed
failure):`; when no earlier line names a rank, that entry's global rank is the initiating
one, not a rank listed under `Failures:` above it. Format: torch 2.14.1
torch/distributed/elastic/multiprocessing/errors/__init__.py (_MSG_FORMAT_TEMPLATE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

_UNTAGGED_CRASH = ["Traceback (most recent call last):", '  File "/home/dev/proj/train.py", line 40, in <module>',
                   "    loss.backward()", "RuntimeError: CUDA error: an illegal memory access was encountered"]


def _entry(index: int, rank: int, local_rank: int) -> list[str]:
    return [f"[{index}]:", "  time      : 2026-12-03_07:12:40", "  host      : gpu-node-07",
            f"  rank      : {rank} (local_rank: {local_rank})", "  exitcode  : 1 (pid: 4412) ", "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]


def _summary(root: tuple[int, int], others: list[tuple[int, int]]) -> list[str]:
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 40, "train.py FAILED",
             "-" * 40, "Failures:"]
    for index, (rank, local_rank) in enumerate(others, 1):
        lines += _entry(index, rank, local_rank)
    lines += [] if others else ["  <NO_OTHER_FAILURES>"]
    return [*lines, "-" * 40, "Root Cause (first observed failure):", *_entry(0, *root), "=" * 40]


@pytest.mark.parametrize(("root", "others"), [((0, 0), [(1, 1)]), ((2, 2), [(0, 0), (1, 1), (3, 3)]), ((3, 3), [])])
def test_the_root_cause_entry_names_the_initiating_rank(
    tmp_path: Path, root: tuple[int, int], others: list[tuple[int, int]]
) -> None:
    path = tmp_path / "torchrun.log"
    path.write_text("\n".join(_UNTAGGED_CRASH + _summary(root, others)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == root[0]


def test_a_summary_pasted_in_reverse_still_names_its_only_rank(tmp_path: Path) -> None:
    """Some pastes reverse a block's lines; a report that lists one rank names it wherever its fields sit."""
    path = tmp_path / "torchrun.log"
    path.write_text("\n".join(_UNTAGGED_CRASH + list(reversed(_summary((5, 1), [])))) + "\n")
    assert diagnose([str(path)]).initiating_rank == 5


def test_a_failures_list_without_its_root_cause_block_names_no_one(tmp_path: Path) -> None:
    """The `Failures:` list names ranks that failed after the first; cut before `Root Cause`, it names no initiator."""
    lines = _summary((0, 0), [(6, 2)])
    path = tmp_path / "torchrun.log"
    path.write_text("\n".join(_UNTAGGED_CRASH + lines[: lines.index("Root Cause (first observed failure):")]) + "\n")
    assert diagnose([str(path)]).initiating_rank != 6
