"""Every rank reports that training finished; then the agents of a two-node c10d job lose their store, whose
host exited first. That is the teardown of a finished run, not a failure; the same lines before any
report of a finish still are."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

_STEPS = [f"{node}: [rank{rank}] step {step:3d} | loss {4.9 - 0.01 * step:.4f} | 190 ms/it"
          for step in (5, 10, 15) for node, rank in (("0", 0), ("1", 1))]
_FINISHED = ["0: [rank0] training finished in 3.1s", "1: [rank1] training finished in 3.1s"]
_STORE_GONE = [
    "0: [W1207 09:14:02.118203114 TCPStore.cpp:115] [c10d] recvVector failed on SocketImpl(fd=3, "
    "addr=[::ffff:10.0.0.5]:51324, remote=[::ffff:10.0.0.4]:29400): Failed to recv, got 0 bytes. "
    "Connection was likely closed. Did the remote server shutdown or crash?",
    "0: W1207 09:14:02.402000 7781 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] The node "
    "'gpu-a_7781_0' has failed to shutdown the rendezvous 'job7' due to an error of type RendezvousConnectionError.",
]


def _status(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "job.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).status


def test_store_errors_after_every_rank_finished_are_teardown(tmp_path: Path) -> None:
    assert _status(tmp_path, [*_STEPS, *_FINISHED, *_STORE_GONE]) == "no-failure"


def test_the_same_errors_mid_run_are_a_failure(tmp_path: Path) -> None:
    assert _status(tmp_path, [*_STEPS, *_STORE_GONE]) != "no-failure"
