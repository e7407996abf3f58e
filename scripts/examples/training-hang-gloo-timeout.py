"""Regenerate training-hang/positive-4.log (CPU, torchrun + gloo).

positive-4.log: 2 ranks under `torchrun --tee 3`, process group timeout 20 s. At step 5
  rank 1 blocks for 40 s outside any collective (standing in for a stalled data read or
  a slow checkpoint write on one rank); rank 0 waits in all_reduce and the gloo backend
  times it out: "Timed out waiting 20000ms for recv operation to complete". Rank 1 is
  the only rank that never reports the timeout, so the analysis names it as the rank
  holding the others up (a hang), not the timeout itself.

Run: .venv/bin/python scripts/examples/training-hang-gloo-timeout.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "training-hang"

TRAIN = r'''
import datetime, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
for step in range(1, 11):
    loss = model(torch.randn(32, 64)).pow(2).mean()
    loss.backward()
    if rank == 1 and step == 5:
        print(f"rank {rank}: step {step}: reading shard 00017 from /mnt/datasets ...", flush=True)
        time.sleep(40)
    for p in model.parameters():
        dist.all_reduce(p.grad)
    model.zero_grad()
    print(f"rank {rank}: step {step} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    run_logged(ID, "positive-4.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29721", "--tee", "3",
                                      "train.py"], files={"train.py": TRAIN})
