"""Native-library family: metrics via numpy, optional fused op from a prebuilt shared library (ctypes)."""
import argparse, os, sys, ctypes
import torch, torch.nn as nn
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, make_model, batch, say, finish
p = argparse.ArgumentParser()
p.add_argument("--fused-lib", default=None)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--logging", action="store_true")
a = p.parse_args()
rank, world, log = setup(a.logging)
import numpy as np
fused = None
if a.fused_lib:
    fused = ctypes.CDLL(a.fused_lib)
    fused.fastnorm_apply.restype = ctypes.c_float; fused.fastnorm_apply.argtypes = [ctypes.c_float]
    say(rank, f"loaded fused kernels from {a.fused_lib}", log)
model = make_model(world); opt = torch.optim.SGD(model.parameters(), lr=0.05); lossf = nn.CrossEntropyLoss()
hist = []
for step in range(a.steps):
    x, y = batch(step, rank)
    loss = lossf(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    hist.append(loss.item())
    if step % 5 == 0:
        sm = float(np.mean(hist[-5:]))
        if fused is not None: sm = fused.fastnorm_apply(sm)
        say(rank, f"step {step} loss {loss.item():.4f} smoothed {sm:.4f}", log)
say(rank, "done", log)
finish()
