"""Regenerate the real parts of the host-oom-killed examples (CPU, torchrun + gloo).

The kernel OOM killer cannot be triggered safely on a shared 2-core machine, so the
worker that "runs out of host RAM" sends itself SIGKILL - exactly what the OOM killer
delivers - after growing a host-side cache. What torchrun prints is real.

positive-1.log: a Slurm job step: `srun torchrun --nproc-per-node 4 --tee 3 ...`; rank 2's
  host cache grows and it is SIGKILLed. torchrun's console is real; the two lines that
  slurmstepd and srun add to the same job output when the step's cgroup recorded an
  oom_kill event are appended in Slurm's wording (src/plugins/task/cgroup, srun).
positive-2.log: the bare torchrun console of the same failure (2 ranks, no --tee) with
  no other evidence: `exitcode: -9` / `Signal 9 (SIGKILL)` and nothing that explains it.

Run: .venv/bin/python scripts/examples/host-oom-killed.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run, write_log

ID = "host-oom-killed"

TRAIN = r'''
import os, signal, sys, time
import torch
import torch.distributed as dist

BAD_RANK = int(sys.argv[1])
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(128, 128)
cache = []
for step in range(1, 9):
    loss = model(torch.randn(64, 128)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    model.zero_grad()
    if rank == BAD_RANK:
        cache.append(torch.empty(8 << 20, dtype=torch.uint8))   # host-side sample cache
        print(f"rank {rank}: step {step} loss {loss.item():.4f} sample cache {8 * len(cache)} MiB",
              flush=True)
        if step == 6:
            os.kill(os.getpid(), signal.SIGKILL)   # what the kernel OOM killer delivers
    else:
        print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.3)
dist.destroy_process_group()
'''

SLURM_TAIL = (
    "slurmstepd: error: Detected 1 oom_kill event in StepId=48213.0. "
    "Some of the step tasks have been OOM Killed.\n"
    "srun: error: gpu-node-07: task 0: Out Of Memory\n"
)


def run_pretrain(cmd: list[object], name: str, tail: str = "") -> None:
    result = run(cmd, files={"pretrain.py": TRAIN}, env={"OMP_NUM_THREADS": "1"})
    write_log(ID, name, result.output + tail, result.returncode)


if __name__ == "__main__":
    run_pretrain([TORCHRUN, "--nproc-per-node", "4", "--master-port", "29731", "--tee", "3", "pretrain.py", "2"],
                 "positive-1.log", SLURM_TAIL)
    run_pretrain([TORCHRUN, "--nproc-per-node", "2", "--master-port", "29732", "pretrain.py", "1"], "positive-2.log")
