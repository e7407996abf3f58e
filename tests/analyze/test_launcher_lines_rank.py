"""For a failure no class explains, the initiating rank comes from the ranks' own failure lines, not from
the launcher's lines about them: under `srun --label` with one torchrun per node, the `1: ` tag on the
agent's lines is the node, not a rank."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose

TRAINING = [f"{node}: [rank{rank}]: step {step}/20 loss={3.1 - step * 0.05:.3f}"
            for step in range(1, 6) for node, rank in ((0, 0), (0, 1), (1, 2), (1, 3))]

RANK_3_FAILS = [
    "1: [rank3]: Traceback (most recent call last):",
    '1: [rank3]:   File "/srv/job/train.py", line 140, in <module>',
    "1: [rank3]:     writer.append(record)",
    "1: [rank3]: tables.exceptions.HDF5ExtError: HDF5 error back trace: H5Dwrite(): can't write data",
    "1: W1207 16:41:47.624000 16407 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
    "16563 closing signal SIGTERM",
    "1: E1207 16:41:47.706000 16407 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
    "local_rank: 1 (pid: 16566) of binary: /opt/venv/bin/python3",
    "1: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "0: W1207 16:41:50.235000 16381 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
    "16567 closing signal SIGTERM",
]


def test_the_rank_that_raised_first_is_the_initiator_not_the_node_tag_on_the_launcher_lines(tmp_path: Path) -> None:
    path = tmp_path / "job.out"
    path.write_text("\n".join(TRAINING + RANK_3_FAILS) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status.value == "unknown-failure"
    assert diagnosis.initiating_rank == 3
