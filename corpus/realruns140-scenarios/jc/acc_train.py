"""accelerate-driven classifier with mixed-precision request and an inf-guard on the loss."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset
import logging

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--precision", default="no")
p.add_argument("--overflow-batch", type=int, default=-1)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
logger = get_logger("acc_train")
acc = Accelerator(mixed_precision=args.precision, gradient_accumulation_steps=2)
logger.info(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} mixed_precision={acc.mixed_precision}", main_process_only=False)
set_seed(0)
X = torch.randn(2048, 24)
Y = (X[:, :3].sum(1) > 0).long()
dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(24, 64), nn.GELU(), nn.Linear(64, 2))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for ep in range(args.epochs):
    model.train()
    for i, (x, y) in enumerate(dl):
        with acc.accumulate(model):
            if step == args.overflow_batch and acc.process_index == 1:
                x = x * 1e38  # unnormalised raw-sensor batch
            loss = F.cross_entropy(model(x), y)
            flag = torch.tensor([0.0 if math.isfinite(loss.item()) else 1.0])
            if acc.gather(flag).sum() > 0:
                logger.warning(f"step {step}: loss={loss.item()} on process {acc.process_index}, batch skipped", main_process_only=False)
                opt.zero_grad()
                step += 1
                continue
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
        step += 1
        if step % 25 == 0:
            l = acc.gather(loss.detach()).mean().item()
            logger.info(f"epoch {ep} step {step} loss {l:.4f}")
    with torch.no_grad():
        correct = 0
        for x, y in dl:
            correct += acc.gather((model(x).argmax(1) == y).sum()).sum().item()
    logger.info(f"epoch {ep} train accuracy {correct / 2048:.3f}")
acc.wait_for_everyone()
acc.end_training()
logger.info("finished")
