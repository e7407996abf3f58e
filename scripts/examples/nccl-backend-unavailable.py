#!/usr/bin/env python
"""Regenerate the real (Linux, CPU-only build) look-alikes of `nccl-backend-unavailable`.

`nccl-backend-unavailable` specializes `torch-not-compiled-with-cuda`: on Linux, "Distributed
package doesn't have NCCL built in" means a CPU-only wheel, which is the generic class. These
real runs on the CPU-only build here are therefore NEGATIVE examples of this entry (they must
diagnose to torch-not-compiled-with-cuda); the positives (Windows/macOS) are written by hand.

negative-1: the gloo group works, then `.cuda()` on a CPU-only build raises `Torch not
            compiled with CUDA enabled`.
negative-2: torchrun, 2 ranks, `init_process_group("nccl")` on a Linux CPU-only build.
negative-3: the same request through torch.multiprocessing.spawn (ProcessRaisedException form).

    .venv/bin/python scripts/examples/nccl-backend-unavailable.py
"""

from _runner import free_port, python_console, torchrun_console, write_log

TORCHRUN_WORKER = r'''
import logging, os
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("torch %s, cuda available: %s", torch.__version__, torch.cuda.is_available())
dist.init_process_group(backend="nccl")
'''

SPAWN_WORKER = r'''
import os
import torch, torch.distributed as dist, torch.multiprocessing as mp


def run(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("EXAMPLE_PORT", "12355")
    dist.init_process_group(backend="nccl", init_method="env://", world_size=world_size, rank=rank)
    print(f"rank {rank} ready", flush=True)


if __name__ == "__main__":
    print("spawning 2 training processes", flush=True)
    mp.spawn(run, args=(2,), nprocs=2, join=True)
'''

NEGATIVE = r'''
import torch, torch.distributed as dist
dist.init_process_group(backend="gloo")
print(f"rank {dist.get_rank()}: process group ready, moving model to GPU", flush=True)
model = torch.nn.Linear(16, 4).cuda()
'''

if __name__ == "__main__":
    ID = "nccl-backend-unavailable"
    write_log(ID, "negative-2.log", torchrun_console(TORCHRUN_WORKER, ["--nproc-per-node", "2", "--tee", "3"]))
    write_log(ID, "negative-3.log", python_console(SPAWN_WORKER, env={"EXAMPLE_PORT": str(free_port())}))
    write_log(ID, "negative-1.log", torchrun_console(NEGATIVE, ["--nproc-per-node", "2"]))
