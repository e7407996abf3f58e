"""Tiny regression trained through accelerate."""
import argparse, torch, torch.nn as nn
from accelerate import Accelerator
p = argparse.ArgumentParser(); p.add_argument("--steps", type=int, default=30); args = p.parse_args()
acc = Accelerator()
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} mixed_precision={acc.mixed_precision}")
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt = acc.prepare(model, opt)
for step in range(args.steps):
    x = torch.randn(16, 10); y = x.mean(1, keepdim=True)
    loss = nn.functional.mse_loss(model(x), y)
    acc.backward(loss); opt.step(); opt.zero_grad()
    if step % 10 == 0: acc.print(f"step {step} loss {loss.item():.4f}")
acc.print("finished")
