"""The initiating rank comes from the ranks' own failure lines, or from torchrun's failure report, not from
the tags on the launcher's own lines: under `srun --label` with one torchrun per node, the `1: ` on the
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


KILLED_BY_SIGBUS_ON_NODE_1 = [
    "1: E1207 16:31:53.782000 23993 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -7) "
    "local_rank: 1 (pid: 24035) of binary: /opt/venv/bin/python3",
    "1: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "1: ============================================================",
    "1: train.py FAILED",
    "1: ------------------------------------------------------------",
    "1: Root Cause (first observed failure):",
    "1: [0]:",
    "1:   time      : 2026-12-07_16:31:53",
    "1:   host      : gpu-a02",
    "1:   rank      : 3 (local_rank: 1)",
    "1:   exitcode  : -7 (pid: 24035)",
    "1:   error_file: <N/A>",
    "1:   traceback : Signal 7 (SIGBUS) received by PID 24035",
    "1: ============================================================",
]


def test_a_signal_read_off_torchruns_report_is_the_rank_the_report_names(tmp_path: Path) -> None:
    path = tmp_path / "job.out"
    path.write_text("\n".join(TRAINING + KILLED_BY_SIGBUS_ON_NODE_1) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "worker-killed-by-signal"
    assert diagnosis.initiating_rank == 3
