"""Ranks that failed waiting in different collectives ran different sequences of collectives (a
desync), which a timeout on each rank only shows; ranks waiting in one collective show a peer that
stalled, and a job torn down by a signal leaves its ranks wherever they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose

SITE = "/opt/venv/lib/python3.11/site-packages/torch"
TIMEOUT = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
           "Timed out waiting 30000ms for recv operation to complete")
CLOSED = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
          "[10.0.0.2]:41870")
_C10D_LINES = {"all_reduce": 3252, "barrier": 5356, "broadcast": 3151}


def _in_collective(rank: int, function: str, error: str, line: int = 90) -> list[str]:
    """A rank's traceback through the script into torch.distributed's `function`."""
    frames = ["Traceback (most recent call last):",
              f'  File "/work/train.py", line {line}, in <module>',
              f"    dist.{function}(stats)",
              f'  File "{SITE}/distributed/c10d_logger.py", line 83, in wrapper',
              "    return func(*args, **kwargs)",
              f'  File "{SITE}/distributed/distributed_c10d.py", line {_C10D_LINES[function]}, in {function}',
              "    work.wait()",
              error]
    return [f"[rank{rank}]: {text}" for text in frames]


def _in_backward(rank: int, error: str, torch_1: bool = False) -> list[str]:
    """A rank's traceback through DDP's backward, whose gradient all-reduce has no Python frame
    (torch 1.x ends in autograd's `backward`, 2.3 and later in `_engine_run_backward`)."""
    engine = ([f'  File "{SITE}/autograd/__init__.py", line 173, in backward'] if torch_1
              else [f'  File "{SITE}/autograd/graph.py", line 979, in _engine_run_backward'])
    frames = ["Traceback (most recent call last):",
              '  File "/work/train.py", line 84, in <module>',
              "    loss.backward()",
              f'  File "{SITE}/_tensor.py", line 623, in backward',
              "    torch.autograd.backward(",
              *engine,
              "    Variable._execution_engine.run_backward(",
              error]
    return [f"[rank{rank}]: {text}" for text in frames]


def _steps(world: int) -> list[str]:
    return [f"[rank{rank}]: step {step} loss 0.{40 - step}" for step in range(3) for rank in range(world)]


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_ranks_timing_out_in_different_collectives_are_a_desync(tmp_path: Path) -> None:
    lines = _steps(2) + _in_collective(1, "all_reduce", CLOSED) + _in_collective(0, "broadcast", TIMEOUT)
    # the rank that waited out its timeout, not the one that then lost its peer
    assert _diagnose(tmp_path, lines) == ("collective-mismatch", 0)
    reason = diagnose([str(tmp_path / "job.log")]).suspects[0].reason
    assert "rank 0 in broadcast" in reason and "rank 1 in all_reduce" in reason


@pytest.mark.parametrize("torch_1", [False, True])
def test_a_rank_in_ddp_backward_waits_in_a_collective_too(tmp_path: Path, torch_1: bool) -> None:
    lines = _steps(2) + _in_collective(1, "all_reduce", TIMEOUT) + _in_backward(0, CLOSED, torch_1)
    assert _diagnose(tmp_path, lines) == ("collective-mismatch", 1)


def test_the_one_rank_in_barrier_left_the_others_sequence(tmp_path: Path) -> None:
    """Uneven data: rank 1 ran out of batches and waits in the final barrier; rank 0 timed out in the
    next step's gradient all-reduce, and rank 1 then lost its peer."""
    lines = _steps(2) + _in_backward(0, TIMEOUT) + _in_collective(1, "barrier", CLOSED)
    assert _diagnose(tmp_path, lines) == ("collective-mismatch", 1)


def test_the_one_rank_in_a_collective_no_other_called_took_the_other_path(tmp_path: Path) -> None:
    lines = (_steps(3) + _in_backward(0, TIMEOUT) + _in_backward(1, TIMEOUT)
             + _in_collective(2, "barrier", TIMEOUT))
    assert _diagnose(tmp_path, lines) == ("collective-mismatch", 2)


def test_ranks_timing_out_in_the_same_collective_are_not_a_desync(tmp_path: Path) -> None:
    lines = _steps(3) + _in_collective(0, "all_reduce", TIMEOUT) + _in_collective(1, "all_reduce", TIMEOUT)
    root, _ = _diagnose(tmp_path, lines)
    assert root is not None and root != "collective-mismatch"


def test_a_job_torn_down_by_a_signal_is_not_a_desync(tmp_path: Path) -> None:
    signal = ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15")
    lines = (_steps(2) + _in_collective(1, "broadcast", TIMEOUT) + _in_backward(0, TIMEOUT)
             + ["Traceback (most recent call last):", '  File "/opt/venv/bin/torchrun", line 8, in <module>', signal])
    root, _ = _diagnose(tmp_path, lines)
    assert root is not None and root != "collective-mismatch"
