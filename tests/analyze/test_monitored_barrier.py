"""A monitored barrier names the rank that never arrived. That rank hung, lagged or died: the
barrier's own class is the answer unless a dump of the named rank's stack shows it stuck,
which makes it a hang (as with TORCH_DISTRIBUTED_DEBUG=DETAIL and faulthandler), or the named rank's
own error is in the log: it crashed, and under DETAIL rank 0 then reports it missing from the
monitored barrier PyTorch runs before every collective."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def _barrier_errors() -> list[str]:
    lines = [f"[rank{r}]: 2025-03-02 08:00:0{r},000 INFO step 40 loss 1.9{r}" for r in range(3)]
    for rank in (1, 2):
        message = (f"Rank {rank} successfully reached monitoredBarrier, but received errors while waiting for "
                   "send/recv from rank 0. Please check rank 0 logs for faulty rank.")
        lines += [f"[rank{rank}]:[E0302 08:30:11.000000000 ProcessGroupGloo.cpp:67] {message}",
                  f"[rank{rank}]: Traceback (most recent call last):",
                  f'[rank{rank}]:   File "/srv/job/train.py", line 120, in <module>',
                  f"[rank{rank}]:     sync_epoch()",
                  f"[rank{rank}]: RuntimeError: {message}"]
    return lines


def _stack_dump_of_rank0() -> list[str]:
    return ["[rank0]:Thread 0x00007f3a2c1ff740 (most recent call first):",
            '[rank0]:  File "/srv/job/data.py", line 57 in wait_for_shard',
            '[rank0]:  File "/srv/job/train.py", line 101 in sync_epoch']


def _missed_in_detail_mode(rank0_waits_in: str = "all_reduce") -> list[str]:
    """Rank 0 under TORCH_DISTRIBUTED_DEBUG=DETAIL (torch 2.13): rank 1 never reached the collective."""
    site = "/opt/venv/lib/python3.11/site-packages/torch/distributed"
    return ["[rank0]:[E1206 05:27:43.970276707 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to pass "
            "monitoredBarrier in 8000 ms",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/srv/job/train.py", line 13, in <module>',
            f"[rank0]:     dist.{rank0_waits_in}(p.grad)",
            f'[rank0]:   File "{site}/distributed_c10d.py", line 3245, in {rank0_waits_in}',
            "[rank0]:     work = group.allreduce([tensor], opts)",
            "[rank0]: RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 8000 ms"]


def _rank1_raised(exception: str) -> list[str]:
    return ["[rank1]: Traceback (most recent call last):",
            '[rank1]:   File "/srv/job/train.py", line 41, in <module>',
            "[rank1]:     check_step(loss)",
            '[rank1]:   File "/srv/job/checks.py", line 12, in check_step',
            "[rank1]:     raise_if_bad(loss)",
            f"[rank1]: {exception}"]


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_the_barrier_report_alone_is_its_own_class(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, _barrier_errors()) == ("monitored-barrier-timeout", 0)


def test_a_stack_dump_of_the_named_rank_makes_it_a_hang(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, _stack_dump_of_rank0() + _barrier_errors()) == ("training-hang", 0)


def test_the_named_ranks_own_error_outranks_the_barrier(tmp_path: Path) -> None:
    lines = _rank1_raised("RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.")
    path = tmp_path / "job.log"
    path.write_text("\n".join(_barrier_errors()[:3] + lines + _missed_in_detail_mode()) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "autograd-anomaly-nan"
    assert diagnosis.initiating_rank == 1
    assert "monitored-barrier-timeout" in {c.id for c in diagnosis.collateral}


def test_an_error_no_class_knows_on_the_named_rank_is_not_the_barriers(tmp_path: Path) -> None:
    lines = _rank1_raised("checks.BadBatchError: batch 4411 has 0 tokens after filtering")
    root, rank = _diagnose(tmp_path, _barrier_errors()[:3] + lines + _missed_in_detail_mode())
    assert root != "monitored-barrier-timeout" and rank == 1


def test_an_error_on_another_rank_leaves_the_barrier_the_answer(tmp_path: Path) -> None:
    """Rank 2's error is not what the barrier waited for: rank 1, which it names, printed nothing."""
    lines = [line.replace("[rank1]", "[rank2]") for line in _rank1_raised("checks.BadBatchError: batch 7 is empty")]
    assert _diagnose(tmp_path, _barrier_errors()[:3] + lines + _missed_in_detail_mode()) == (
        "monitored-barrier-timeout", 1)
