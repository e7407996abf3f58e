"""When the ranks report an NCCL watchdog timeout and one seen rank does not, that silent rank is
the one stuck outside the collective (a hang). The inference needs at least two reporters, and
a rank whose only line is the cut last line of a paste was not silent: its report was cut."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def _timeout(rank: int) -> str:
    return (f"[rank{rank}]:[E1203 10:00:0{rank}.000000000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 60012{rank} milliseconds before timing out.")


def _step(rank: int) -> str:
    return f"[rank{rank}]: step 40 | loss 2.1{rank} | lr 3.0e-04"


def _diagnose(tmp_path: Path, lines: list[str], newline: str = "\n") -> tuple[str | None, int | None]:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + newline)
    diagnosis = diagnose([str(path)])
    return (diagnosis.root_cause.id if diagnosis.root_cause else None), diagnosis.initiating_rank


def test_the_one_rank_that_stays_silent_among_reporters_is_the_stuck_one(tmp_path: Path) -> None:
    lines = [_step(r) for r in range(4)] + [_timeout(r) for r in (1, 2, 3)]
    assert _diagnose(tmp_path, lines) == ("training-hang", 0)


def test_a_lone_report_names_the_silent_peer_that_was_training(tmp_path: Path) -> None:
    lines = [_step(0), _step(1), _timeout(0)]
    assert _diagnose(tmp_path, lines) == ("training-hang", 1)


def test_a_lone_report_does_not_single_out_a_rank_seen_on_a_stray_line(tmp_path: Path) -> None:
    stray = ("[rank3]: NCCL INFO NET/Plugin: dlerror=libnccl-net.so: cannot open shared object file: "
             "No such file or directory")
    lines = [stray, _timeout(6)]
    root, rank = _diagnose(tmp_path, lines)
    assert root == "nccl-watchdog-timeout"
    assert rank != 3


def test_a_rank_seen_only_on_a_cut_last_line_was_not_silent(tmp_path: Path) -> None:
    lines = [_timeout(r) for r in (1, 2, 3)] + [_timeout(0)[:60]]
    root, rank = _diagnose(tmp_path, lines, newline="")
    assert root == "nccl-watchdog-timeout"
    assert rank != 0
