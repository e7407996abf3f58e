"""Tiny accelerate training loop (long-running; used for scheduler-stop scenarios)."""
import argparse, time, torch, torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import TensorDataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--step-sleep", type=float, default=0.3)
a = p.parse_args()
acc = Accelerator()
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
X = torch.randn(8192, 32); Y = X.sum(1, keepdim=True)
dl = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
while step < a.steps:
    for x, y in dl:
        loss = nn.functional.mse_loss(model(x), y)
        acc.backward(loss); opt.step(); opt.zero_grad()
        step += 1
        if step % 10 == 0:
            print(f"[process {acc.process_index}] step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(a.step_sleep)
        if step >= a.steps:
            break
acc.print("training complete")
