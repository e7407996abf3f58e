"""The report's "your code" frame and exception come from the culprit rank's own traceback,
also when torchrun tags lines only with `[defaultN]:` and two ranks' tracebacks interleave."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"
_WATCHDOG = ("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
             "exception: CUDA error: an illegal memory access was encountered")


def _frames(function: str, line: int, code: str) -> list[str]:
    return ['  File "/home/alice/proj/train.py", line 88, in <module>', "    main(cfg)",
            f'  File "/home/alice/proj/train.py", line {line}, in {function}', f"    {code}"]


def _log(tmp_path: Path, lines: list[tuple[int, str]]) -> Path:
    path = tmp_path / "torchrun.log"
    path.write_text("".join(f"[default{rank}]:{text}\n" for rank, text in lines))
    return path


def test_the_frame_is_the_culprits_when_another_ranks_traceback_is_nearer(tmp_path: Path) -> None:
    """Rank 1's watchdog line is the root; rank 0's traceback ends between rank 1's first
    frames and the rest of rank 1's traceback."""
    rank0 = _frames("evaluate", 52, "dist.all_reduce(t)")
    rank1 = _frames("load_batch", 41, "x = model(batch)")
    lines = [(0, "step 10 loss 2.31"), (1, "step 10 loss 2.30"),
             (1, "terminate called after throwing an instance of 'c10::DistBackendError'"), (1, _WATCHDOG),
             (1, "Traceback (most recent call last):"), *[(1, text) for text in rank1[:2]],
             (0, "Traceback (most recent call last):"), *[(0, text) for text in rank0], (0, _ILLEGAL),
             *[(1, text) for text in rank1[2:]], (1, _ILLEGAL)]
    diagnosis = diagnose([str(_log(tmp_path, lines))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == 1
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.line, frame.function) == (41, "load_batch")


def test_both_ranks_raise_and_the_report_shows_the_first_ones_exception(tmp_path: Path) -> None:
    rank0 = _frames("evaluate", 52, "dist.all_reduce(t)")
    rank1 = _frames("load_batch", 41, 'x = batch["pixels"]')
    lines = [(0, "Traceback (most recent call last):"), (1, "Traceback (most recent call last):")]
    lines += [pair for a, b in zip(rank0, rank1, strict=True) for pair in ((0, a), (1, b))]
    lines += [(1, "KeyError: 'pixels'"), (0, "RuntimeError: Connection closed by peer [127.0.0.1]:29500")]
    diagnosis = diagnose([str(_log(tmp_path, lines))])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "user-code-exception"
    assert diagnosis.initiating_rank == 1
    assert diagnosis.root_cause.exception == "KeyError: 'pixels'"
    frame = diagnosis.root_cause.user_frame
    assert frame is not None and (frame.line, frame.function) == (41, "load_batch")
