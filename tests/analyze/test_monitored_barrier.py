"""A monitored barrier names the rank that never arrived. That rank hung, lagged or died: the
barrier's own class is the answer unless a dump of the named rank's stack shows it stuck,
which makes it a hang (as with TORCH_DISTRIBUTED_DEBUG=DETAIL and faulthandler)."""

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


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_the_barrier_report_alone_is_its_own_class(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, _barrier_errors()) == ("monitored-barrier-timeout", 0)


def test_a_stack_dump_of_the_named_rank_makes_it_a_hang(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, _stack_dump_of_rank0() + _barrier_errors()) == ("training-hang", 0)
