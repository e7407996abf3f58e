"""gloo timed out waiting for a rank that never joined the collective. That rank hung, lagged or
was busy elsewhere (a long evaluation, a lock, a slow read); the log shows only that the others
waited: gloo's own timeout is the finding, pinned on the silent rank. A dump of that rank's stack
(faulthandler, py-spy) shows it stuck, which makes it a hang, as for a monitored barrier."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_GLOO = "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"


def _steps() -> list[str]:
    return [f"[rank{r}]: step {s} | loss 2.{s}{r} | lr 3.0e-04" for s in range(1, 4) for r in range(3)]


def _gloo_timeout(rank: int) -> list[str]:
    return [f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/srv/job/train.py", line 77, in <module>',
            f"[rank{rank}]:     dist.all_reduce(loss_sum)",
            f"[rank{rank}]: RuntimeError: {_GLOO} Timed out waiting 60000ms for recv operation to complete"]


def _stack_dump_of_rank1() -> list[str]:
    return ["[rank1]:Thread 0x00007f0c9a3fe740 (most recent call first):",
            '[rank1]:  File "/srv/job/shards.py", line 41 in wait_for_lock',
            '[rank1]:  File "/srv/job/train.py", line 70 in next_batch']


def _diagnose(tmp_path: Path, lines: list[str]) -> tuple[str | None, int | None]:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_the_timeout_is_the_finding_and_names_the_rank_that_never_joined(tmp_path: Path) -> None:
    lines = _steps() + _gloo_timeout(0) + _gloo_timeout(2)
    assert _diagnose(tmp_path, lines) == ("gloo-collective-timeout", 1)


def test_a_stack_dump_of_the_silent_rank_makes_it_a_hang(tmp_path: Path) -> None:
    lines = _steps() + _stack_dump_of_rank1() + _gloo_timeout(0) + _gloo_timeout(2)
    assert _diagnose(tmp_path, lines) == ("training-hang", 1)
