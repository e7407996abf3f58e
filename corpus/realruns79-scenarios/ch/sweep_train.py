"""Sweep-agent style trainer: the run name comes from the environment (RUN_NAME, set by the sweep
scheduler) plus the hyperparameters; checkpoints go to OUT_DIR/<run name>/ckpt_<step>.pt.
Runs as plain `python` (single process) with a tqdm bar, or under torchrun (rank 0 saves)."""
import argparse
import os
import time

import torch
import torch.nn as nn
from tqdm import tqdm


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--wd", type=float, default=0.01)
    p.add_argument("--ckpt-every", type=int, default=20)
    args = p.parse_args()
    run_name = os.environ.get("RUN_NAME", "local")
    hp = f"lr{args.lr:g}_wd{args.wd:g}_steps{args.steps}"
    out_dir = os.path.join(os.environ.get("OUT_DIR", "runs"), f"{run_name}__{hp}")
    print(f"run dir: {out_dir}", flush=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.wd)
    x = torch.randn(512, 32)
    y = x[:, :3].sum(1, keepdim=True)
    bar = tqdm(range(1, args.steps + 1), desc="train", ncols=100)
    for step in bar:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.03)
        bar.set_postfix(loss=f"{loss.item():.4f}")
        if step % args.ckpt_every == 0:
            os.makedirs(out_dir, exist_ok=True)
            torch.save({"model": model.state_dict(), "step": step}, os.path.join(out_dir, f"ckpt_{step:06d}.pt"))
            tqdm.write(f"step {step}: saved checkpoint")
    print("finished", flush=True)


if __name__ == "__main__":
    main()
