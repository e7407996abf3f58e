"""Small single-process trainer whose outputs go through ordinary Python file objects / stdout.

--ckpt-every N : write a full checkpoint (model + optimizer + RNG + replay buffer) every N steps
--buffer-mb M  : size of the replay buffer saved in the checkpoint
--dl-workers W : DataLoader workers (re-created every epoch)
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-dir", default="/work/rr125/hj/runs/ckpt-limits")
p.add_argument("--buffer-mb", type=int, default=8)
p.add_argument("--dl-workers", type=int, default=0)
p.add_argument("--epochs", type=int, default=1)
args = p.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 8))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
replay = torch.zeros(args.buffer_mb * 1024 * 1024 // 4)
X = torch.randn(4096, 64)
Y = torch.randint(0, 8, (4096,))
dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=args.dl_workers)
print(f"model: {sum(p.numel() for p in model.parameters())} params; replay buffer {args.buffer_mb} MB; "
      f"dataloader workers={args.dl_workers}", flush=True)
step = 0
for epoch in range(args.epochs):
    for x, y in dl:
        step += 1
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        replay[step % replay.numel()] = loss.item()
        print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        if args.ckpt_every and step % args.ckpt_every == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step:06d}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "replay": replay,
                            "rng": torch.get_rng_state(), "step": step}, f)
            print(f"saved checkpoint {path} ({os.path.getsize(path) / 2**20:.1f} MB)", flush=True)
        time.sleep(0.02)
        if step >= args.steps:
            break
print("finished", flush=True)
