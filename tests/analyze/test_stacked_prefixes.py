"""Initiating rank through stacked prefixes: pdsh hosts, line numbers, torchrun's report."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose
from traintriage.report.model import Status

FAILING = 19


def _multinode_lines() -> list[str]:
    """A DeepSpeed multi-node run through pdsh: `<ip>: [rankN]: ...`, 4 nodes x 8 ranks."""
    lines = []
    for rank in range(32):
        host = f"10.0.3.{10 + rank // 8}"
        lines.append(f"{host}: [rank{rank}]: [2026-12-03 07:10:{rank:02d},000] [INFO] [engine.py:1200:step] step=500 loss=2.31")
    host = f"10.0.3.{10 + FAILING // 8}"
    lines += [
        f"{host}: [rank{FAILING}]: Traceback (most recent call last):",
        f'{host}: [rank{FAILING}]:   File "/workspace/pretrain.py", line 211, in <module>',
        f"{host}: [rank{FAILING}]:     loss.backward()",
        f"{host}: [rank{FAILING}]: RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    for rank in range(32):
        if rank != FAILING:
            host = f"10.0.3.{10 + rank // 8}"
            lines.append(
                f"{host}: [rank{rank}]:[E1203 07:20:{rank:02d}.000000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] "
                "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9001, OpType=ALLREDUCE, NumelIn=1, "
                "NumelOut=1, Timeout(ms)=600000) ran for 600231 milliseconds before timing out.")
    return lines


def test_pdsh_host_before_rank_tag(tmp_path: Path) -> None:
    path = tmp_path / "deepspeed-multinode.log"
    path.write_text("\n".join(_multinode_lines()) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == FAILING


def test_line_numbers_before_the_rank_tags(tmp_path: Path) -> None:
    path = tmp_path / "pasted.log"
    path.write_text("\n".join(f"{n:6d}\t{line}" for n, line in enumerate(_multinode_lines(), 1)) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.initiating_rank == FAILING


def test_torchrun_report_behind_pdsh_hosts_names_the_global_rank(tmp_path: Path) -> None:
    """Only the agent's report names the rank: the global one (19), not local_rank (3)."""
    host = "gpu-node-3"
    lines = [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 40, in <module>',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "E1203 07:12:40.712000 4402 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 3 (pid: 4412) of binary: /usr/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-03_07:12:40",
        f"  host      : {host}",
        f"  rank      : {FAILING} (local_rank: 3)",
        "  exitcode  : 1 (pid: 4412)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ]
    path = tmp_path / "node3.log"
    path.write_text("\n".join(f"{host}: {line}" for line in lines) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"
    assert diagnosis.initiating_rank == FAILING


def _report(rank: int, local_rank: int, time: str, host: str) -> list[str]:
    return ["Root Cause (first observed failure):", "[0]:", f"  time      : {time}", f"  host      : {host}",
            f"  rank      : {rank} (local_rank: {local_rank})", "  exitcode  : 1 (pid: 4412)", "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "============================================================"]


def test_two_nodes_reports_the_earliest_is_the_initiator(tmp_path: Path) -> None:
    """Each node's agent reports its own first failure; the one earlier in time started it,
    wherever it sits in the pasted log."""
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             *_report(3, 3, "2026-12-03_07:45:52", "node-a"),
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             *_report(4, 0, "2026-12-03_07:45:01", "node-b")]
    path = tmp_path / "two-nodes.log"
    path.write_text("\n".join(lines) + "\n")
    assert diagnose([str(path)]).initiating_rank == 4


def test_an_unexplained_failure_still_names_the_rank_that_died(tmp_path: Path) -> None:
    path = tmp_path / "mpirun.log"
    path.write_text("Primary job  terminated normally, but 1 process returned\na non-zero exit code.\n"
                    "mpirun noticed that process rank 6 with PID 0 on node gpu3 exited on signal 4 (Illegal instruction).\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is not Status.no_failure
    assert diagnosis.initiating_rank == 6


def test_mpiruns_first_failed_process_names_the_initiating_rank(tmp_path: Path) -> None:
    # Open MPI 4.x's block after a rank exits non-zero: the rank is the second number of the process name
    path = tmp_path / "mpirun-exit.log"
    path.write_text(
        "[1,0]<stdout>:epoch 3 step 120 loss 1.82\n[1,5]<stdout>:epoch 3 step 120 loss 1.79\n"
        "-" * 74 + "\nPrimary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n" + "-" * 74 + "\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[41219,1],5]\n  Exit code:    1\n" + "-" * 74 + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is not Status.no_failure
    assert diagnosis.initiating_rank == 5
