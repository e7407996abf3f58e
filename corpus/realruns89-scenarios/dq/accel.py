"""Tiny LM from numerics.py trained through HF Accelerate (CPU, gloo)."""
import argparse, os, sys
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numerics import TinyLM, masked_ce  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--max-grad-norm", type=float, default=1.0)
args = p.parse_args()

acc = Accelerator()   # mixed precision etc. come from `accelerate launch` flags / config
set_seed(0)
model = TinyLM(96, 64, 1e-6)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
model, opt = acc.prepare(model, opt)
acc.print(f"state: {acc.state.distributed_type} procs={acc.num_processes} mp={acc.mixed_precision}")
g = torch.Generator().manual_seed(7 + acc.process_index)
for step in range(args.steps):
    s = torch.randint(1, 96, (16, 1), generator=g)
    seq = (s + torch.arange(33)) % 95 + 1
    x, y = seq[:, :-1], seq[:, 1:]
    with acc.autocast():
        loss = masked_ce(model(x), y)
    acc.backward(loss)
    if acc.sync_gradients:
        acc.clip_grad_norm_(model.parameters(), args.max_grad_norm)
    opt.step()
    opt.zero_grad()
    if step % 5 == 0:
        print(f"[proc {acc.process_index}] step {step} loss {loss.item():.4f}", flush=True)
acc.wait_for_everyone()
acc.print("finished")
