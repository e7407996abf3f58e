"""Accelerate training loop with an evaluation function that uses gather_for_metrics.

--fault:
  none          healthy
  eval_main     evaluate() (which calls accelerator.gather_for_metrics) only called under is_main_process
"""
import argparse
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
acc = Accelerator()
log = get_logger(__name__)
log.info(acc.state, main_process_only=False)

torch.manual_seed(0)
X = torch.randn(800, 12)
Y = (X[:, 0] - X[:, 1] > 0).long()
train = DataLoader(TensorDataset(X[:640], Y[:640]), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[640:], Y[640:]), batch_size=32)
model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 2))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
model, opt, train, val = acc.prepare(model, opt, train, val)


def evaluate():
    model.eval()
    correct = n = 0
    with torch.no_grad():
        for x, y in val:
            pred = model(x).argmax(-1)
            pred, y = acc.gather_for_metrics((pred, y))
            correct += (pred == y).sum().item()
            n += y.numel()
    model.train()
    return correct / n


for epoch in range(args.epochs):
    tot = 0.0
    for x, y in train:
        loss = nn.functional.cross_entropy(model(x), y)
        acc.backward(loss)
        opt.step(); opt.zero_grad()
        tot += loss.item()
    log.info(f"epoch {epoch} train_loss {tot / len(train):.4f}", main_process_only=False)
    if args.fault == "eval_main":
        if acc.is_main_process:
            log.info(f"epoch {epoch} val_acc {evaluate():.4f}")
    else:
        a = evaluate()
        log.info(f"epoch {epoch} val_acc {a:.4f}")
acc.wait_for_everyone()
log.info("done")
