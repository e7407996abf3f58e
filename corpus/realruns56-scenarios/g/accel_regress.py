#!/usr/bin/env python
"""Accelerate training loop (CPU, multi-process) for a tiny regression model."""
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--mixed-precision", default="no")
    a = p.parse_args()
    acc = Accelerator(mixed_precision=a.mixed_precision, log_with=None)
    set_seed(0)
    x = torch.randn(1000, 8)  # 1000 samples: not divisible by batch*world -> padded last batch
    y = x @ torch.arange(8.0) + 0.05 * torch.randn(1000)
    dl = DataLoader(TensorDataset(x, y), batch_size=24, shuffle=True)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} device={acc.device}")
    for ep in range(a.epochs):
        model.train()
        bar = tqdm(dl, disable=not acc.is_local_main_process, desc=f"epoch {ep}")
        for xb, yb in bar:
            loss = F.mse_loss(model(xb).squeeze(-1), yb)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        losses = acc.gather_for_metrics(loss.detach().unsqueeze(0))
        acc.print(f"epoch {ep}: mean last-batch loss across ranks {losses.mean().item():.4f}")
    acc.wait_for_everyone()
    acc.print("done")


if __name__ == "__main__":
    main()
