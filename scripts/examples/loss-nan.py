"""Regenerate the real example for loss-nan (CPU, torchrun + gloo).

positive-1.log: 2 ranks under `torchrun --tee 3`, a DDP regression model. At step 37 rank 1
  reads a record whose target is NaN (a corrupted label); its loss is nan, the all-reduced
  gradients poison both replicas, and the MAE/DeiT-style guard
  `if not math.isfinite(loss_value): print("Loss is {}, stopping training"); sys.exit(1)`
  stops both ranks.

Run: .venv/bin/python scripts/examples/loss-nan.py
"""

from __future__ import annotations

from _runner import TORCHRUN, run_logged

ID = "loss-nan"

TRAIN = r'''
import math, sys, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

BAD_STEP = 37
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
gen = torch.Generator().manual_seed(1234 + rank)
w_true = torch.randn(16, 1, generator=torch.Generator().manual_seed(7))
for step in range(1, 61):
    x = torch.randn(64, 16, generator=gen)
    y = x @ w_true + 0.1 * torch.randn(64, 1, generator=gen)
    if rank == 1 and step == BAD_STEP:
        y[17] = float("nan")          # one corrupted label in this batch
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss_value = loss.item()
    if not math.isfinite(loss_value):
        print("Loss is {}, stopping training".format(loss_value), flush=True)
        sys.exit(1)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad()
    if step % 4 == 0 or step >= BAD_STEP - 2:
        print(f"Epoch: [0]  [{step:3d}/500]  lr: 0.003000  loss: {loss_value:.4f}  "
              f"grad_norm: {gnorm.item():.4f}", flush=True)
    time.sleep(0.05)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29711", "--tee", "3",
                                      "main_pretrain.py"], files={"main_pretrain.py": TRAIN})
