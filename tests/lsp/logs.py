"""Logs written for these tests (not taken from any corpus): a 4-rank torchrun-style job in
which one rank runs out of GPU memory and the others time out in the next all-reduce."""

from __future__ import annotations

OOM_RANK = 2
WORLD = 4


def torchrun_oom_log() -> str:
    lines = ["W0601 10:00:00.000000 4242 torch/distributed/run.py:793] starting 4 workers for fit.py"]
    lines += [f"[rank0]: step {step}/500 loss {3.1 - step / 100:.3f} lr 2.0e-04" for step in (10, 20, 30)]
    lines += [
        f"[rank{OOM_RANK}]: Traceback (most recent call last):",
        f'[rank{OOM_RANK}]:   File "/home/me/project/fit.py", line 88, in <module>',
        f"[rank{OOM_RANK}]:     run_epoch(model, loader)",
        f'[rank{OOM_RANK}]:   File "/home/me/project/fit.py", line 51, in run_epoch',
        f"[rank{OOM_RANK}]:     out = model(batch)",
        f"[rank{OOM_RANK}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU {OOM_RANK} "
        "has a total capacity of 79.25 GiB of which 1.10 GiB is free. Process 777 has 78.14 GiB memory in use. "
        "Of the allocated memory 75.02 GiB is allocated by PyTorch, and 1.61 GiB is reserved by PyTorch but "
        "unallocated.",
    ]
    lines += [f"[rank{rank}]:[E601 10:10:05.123456789 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
              "collective operation timeout: WorkNCCL(SeqNum=301, OpType=ALLREDUCE, NumelIn=1048576, "
              "NumelOut=1048576, Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
              for rank in range(WORLD) if rank != OOM_RANK]
    lines.append("E0601 10:10:40.000000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                 f"(exitcode: 1) local_rank: {OOM_RANK} (pid: 5002) of binary: /usr/bin/python3")
    return "\n".join(lines) + "\n"


def with_progress_bars(log: str) -> str:
    """The same log after a tqdm-style bar that redraws itself with bare carriage returns,
    and with Windows line endings: the editor counts more lines than the log has."""
    bar = "".join(f"loading shards: {percent}%\r" for percent in range(0, 100, 25)) + "loading shards: 100%\n"
    return (bar * 3 + log).replace("\n", "\r\n")
