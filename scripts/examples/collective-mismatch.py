"""Regenerate real examples for collective-mismatch (CPU, torchrun + gloo).

positive-1.log: 3 ranks, `--tee 3`, TORCH_DISTRIBUTED_DEBUG=DETAIL; at step 4 rank 1 takes
  an `if rank == 1` branch that calls broadcast while ranks 0 and 2 call all_reduce.
positive-2.log: 2 ranks, plain console (no --tee), TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 1
  all-reduces a tensor of another shape (a rank-dependent batch size).
positive-3.log: the same 2-rank job without TORCH_DISTRIBUTED_DEBUG: gloo's own size check
  aborts rank 0 ("Received data size doesn't match expected size. Is there a distributed
  collective mismatch in your code?", exitcode -6) and rank 1 loses its peer.
positive-gloo-branch-barrier.log: 2 ranks, `--tee 3`, no debug mode, a 10 s timeout: after step 4
  a barrier meant for every rank sits in rank 0's `if rank == 0` branch, so rank 0 times out in
  barrier while rank 1 times out in the next step's all_reduce; nothing names the mismatch but the
  two ranks' tracebacks ending in different collectives.

Run: .venv/bin/python scripts/examples/collective-mismatch.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "collective-mismatch"
DEBUG = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}

TRAIN = r'''
import datetime, sys, time
import torch
import torch.distributed as dist

MODE = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10 if MODE == "branch" else 1800))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(16, 16)
for step in range(1, 7):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    if step == 4:
        if MODE == "op":
            stats = torch.tensor([loss.item(), 1.0])
            if rank == 1:
                dist.broadcast(stats, src=1)
            else:
                dist.all_reduce(stats)
        elif MODE == "shape":
            n = 5 if rank == 1 else 4
            dist.all_reduce(torch.ones(n, 3))
        elif MODE == "branch" and rank == 0:
            dist.barrier()  # "wait for rank 0's checkpoint", but only rank 0 gets here
    model.zero_grad()
    time.sleep(0.2)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "3", "--master-port", "29661", "--tee", "3",
                                      "train.py", "op"], files=files, env=DEBUG)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29662", "train.py", "shape"],
               files=files, env=DEBUG)
    run_logged(ID, "positive-3.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29663", "train.py", "shape"],
               files=files)
    run_logged(ID, "positive-gloo-branch-barrier.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29664",
                                                       "--tee", "3", "train.py", "branch"], files=files)
