"""Accelerate training loop with gradient accumulation (accelerator.accumulate -> DDP no_sync) and resume."""
import argparse, os
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed

p = argparse.ArgumentParser()
p.add_argument("--n-classes", type=int, default=4)
p.add_argument("--resume-from", default=None)
p.add_argument("--save-to", default=None)
p.add_argument("--steps", type=int, default=24)
a = p.parse_args()
acc = Accelerator(gradient_accumulation_steps=4)
set_seed(0)
model = nn.Sequential(nn.Linear(24, 48), nn.ReLU(), nn.Linear(48, a.n_classes))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ds = torch.utils.data.TensorDataset(torch.randn(2048, 24), torch.randint(0, a.n_classes, (2048,)))
dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
if a.resume_from:
    acc.print(f"resuming from {a.resume_from}")
    acc.load_state(a.resume_from)
for i, (x, y) in enumerate(dl):
    with acc.accumulate(model):
        loss = nn.functional.cross_entropy(model(x), y)
        acc.backward(loss); opt.step(); opt.zero_grad()
    if acc.sync_gradients and i % 8 == 7:
        acc.print(f"micro {i} optimizer step loss {loss.item():.4f}")
    if i >= a.steps:
        break
if a.save_to:
    acc.save_state(a.save_to)
    acc.print(f"saved state to {a.save_to}")
acc.end_training()
