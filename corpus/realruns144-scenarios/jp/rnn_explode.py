"""IRNN (ReLU RNN, identity-initialised recurrence) on a long-sequence adding task.

Gradient clipping is configured with error_if_nonfinite=True (as in the original training script).
--gain scales the identity init of the recurrent weights (1.0 = IRNN paper).
"""
import argparse
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--gain", type=float, default=1.0)
p.add_argument("--seq", type=int, default=100)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--max-norm", type=float, default=1e6)
p.add_argument("--every", type=int, default=10)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s | %(message)s")
log = logging.getLogger("irnn")
torch.manual_seed(0)


class IRNN(nn.Module):
    def __init__(self, h=64):
        super().__init__()
        self.rnn = nn.RNN(2, h, nonlinearity="relu", batch_first=True)
        with torch.no_grad():
            self.rnn.weight_hh_l0.copy_(torch.eye(h) * args.gain)
            self.rnn.bias_hh_l0.zero_()
        self.out = nn.Linear(h, 1)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.out(y[:, -1])


def batch(n=32):
    vals = torch.rand(n, args.seq)
    marks = torch.zeros(n, args.seq)
    for i in range(n):
        a, b = torch.randperm(args.seq)[:2]
        marks[i, a] = marks[i, b] = 1
    return torch.stack([vals, marks], -1), (vals * marks).sum(1, keepdim=True)


model = IRNN()
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
log.info("config: seq=%d gain=%.2f lr=%g max_norm=%g", args.seq, args.gain, args.lr, args.max_norm)
for step in range(1, args.steps + 1):
    x, y = batch()
    loss = F.mse_loss(model(x), y)
    if not math.isfinite(loss.item()) or loss.item() > 100:
        log.warning("loss spike at step %d: mse=%.5g", step, loss.item())
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm, error_if_nonfinite=True)
    opt.step()
    if step % args.every == 0 or float(gn) > 1e3:
        log.info("step %4d  mse %.5g  grad_norm %.4g  |W_hh| %.4g", step, loss.item(), float(gn),
                 torch.linalg.matrix_norm(model.rnn.weight_hh_l0, 2).item())
log.info("done")
