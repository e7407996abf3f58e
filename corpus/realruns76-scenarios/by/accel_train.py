"""Tiny GPT-2 (built from a config, no download) trained with Accelerate on CPU/gloo."""
import argparse
import os
import time

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

acc = Accelerator(cpu=True)
set_seed(0)
acc.print(f"accelerate: {acc.num_processes} processes, state={acc.state.distributed_type}")
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
data = torch.randint(0, 256, (512, 32))
dl = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
model.train()
for step, batch in enumerate(dl):
    if step >= args.steps:
        break
    out = model(input_ids=batch, labels=batch)
    acc.backward(out.loss)
    opt.step()
    opt.zero_grad()
    if step % 5 == 0:
        l = acc.gather(out.loss.detach()[None]).mean().item()
        acc.print(f"step {step} loss {l:.4f}")
acc.wait_for_everyone()
acc.print("done")
acc.end_training()
