"""Which rank the others waited for. When the ranks report an NCCL watchdog timeout and one seen rank
does not, that silent rank is the one stuck outside the collective (a hang); the inference needs two
reporters or a peer surely of the job, and a rank whose only line is a paste's cut last line was not
silent. A rank the log never shows, below the highest reporter, is named too; and an NCCL warning
that carries no rank is pinned on the only rank with a traceback."""

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


def test_the_one_rank_below_the_reporters_that_the_log_never_shows_is_named(tmp_path: Path) -> None:
    """Ranks count from 0: ranks 1-3 report, rank 0 never appears, so rank 0 never reached the collective."""
    lines = [_timeout(r).split("]:", 1)[1] for r in (3, 2, 1)]  # glog lines without a launcher prefix
    assert _diagnose(tmp_path, lines) == ("nccl-watchdog-timeout", 0)


def test_reporters_with_two_gaps_name_no_one(tmp_path: Path) -> None:
    lines = [_timeout(r).split("]:", 1)[1] for r in (3, 1)]
    assert _diagnose(tmp_path, lines)[1] is None


_NO_INTERFACE = "gpu-a:4120:4120 [0] bootstrap.cc:48 NCCL WARN Bootstrap : no socket interface found"


def _traceback_of(rank: int) -> list[str]:
    return [f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/srv/job/train.py", line 40, in <module>',
            f"[rank{rank}]:     dist.init_process_group('nccl')"]


def test_an_unranked_nccl_warning_is_pinned_on_the_only_rank_with_a_traceback(tmp_path: Path) -> None:
    assert _diagnose(tmp_path, [_NO_INTERFACE, *_traceback_of(2)]) == ("nccl-no-socket-interface", 2)
