"""Tiny regression trainer with HF Accelerate (launched by `accelerate launch`)."""
import argparse
import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--precision", default="no")
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

acc = Accelerator(mixed_precision=args.precision)
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} device={acc.device} mixed_precision={acc.mixed_precision}")
g = torch.Generator().manual_seed(0)
X = torch.randn(512, 8, generator=g)
Y = X.sum(1, keepdim=True)
dl = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for x, y in dl:
    loss = nn.functional.mse_loss(model(x), y)
    acc.backward(loss)
    opt.step(); opt.zero_grad()
    step += 1
    if step % 10 == 0:
        acc.print(f"step {step} loss {loss.item():.4f}")
    if step >= args.steps:
        break
acc.print("done")
