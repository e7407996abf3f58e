"""Ranks that cannot fetch rank 0's ncclUniqueId from the c10d store say so, and PyTorch ends
their error with `This may indicate a possible application crash on rank 0 ...`: rank 0 is the
one that failed first, even when the paste keeps only those ranks' cut stacks."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_TAIL = ". This may indicate a possible application crash on rank 0 or a network set up issue."


def _peer_lines(rank: int, with_message: bool) -> list[str]:
    lines = [f"[rank{rank}]: frame #41: Py_RunMain + 0x2be (0x55e0c1a4be in /opt/env/bin/python)",
             f"[rank{rank}]: frame #42: __libc_start_main + 0xf3 (0x7f11c2d0b083 in /lib/x86_64-linux-gnu/libc.so.6)",
             f"[rank{rank}]: {_TAIL}"]
    if with_message:
        lines.insert(0, f"[rank{rank}]: torch.distributed.DistBackendError: [{rank}] is setting up NCCL communicator and "
                        "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got "
                        "error: Connection reset by peer")
    return lines


def _initiating(tmp_path: Path, lines: list[str]) -> int | None:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).initiating_rank


def test_the_peers_pointer_names_rank_0_when_their_message_is_cut(tmp_path: Path) -> None:
    lines = _peer_lines(3, False) + _peer_lines(2, False) + [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/srv/job/launcher.py", line 23, in <module>',
        "[rank3]:     launch()"]
    assert _initiating(tmp_path, lines) == 0


def test_the_peers_pointer_names_rank_0_with_the_full_message(tmp_path: Path) -> None:
    assert _initiating(tmp_path, _peer_lines(1, True) + _peer_lines(2, True)) == 0


def test_without_the_pointer_the_first_failing_rank_stays_the_answer(tmp_path: Path) -> None:
    lines = ["[rank2]: Traceback (most recent call last):",
             '[rank2]:   File "/srv/job/train.py", line 40, in <module>',
             "[rank2]: ValueError: shard 17 has no rows",
             "[rank1]: Traceback (most recent call last):",
             '[rank1]:   File "/srv/job/train.py", line 40, in <module>',
             "[rank1]: ValueError: shard 9 has no rows"]
    assert _initiating(tmp_path, lines) == 2
