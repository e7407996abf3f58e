"""Tiny GPT-2 (built from a config, nothing downloaded) trained with accelerate on CPU processes."""
import argparse, os, time, math
import torch
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel
import logging

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
acc = Accelerator(gradient_accumulation_steps=2)
log = get_logger(__name__)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64, use_cache=True)
model = GPT2LMHeadModel(cfg)
model.gradient_checkpointing_enable()
g = torch.Generator().manual_seed(7)
ids = torch.randint(0, 256, (16 * args.steps, 32), generator=g)
dl = DataLoader(TensorDataset(ids), batch_size=4, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
model, opt, dl = acc.prepare(model, opt, dl)
log.info(f"num_processes={acc.num_processes} device={acc.device} steps={args.steps}", main_process_only=True)
model.train()
for step, (x,) in enumerate(dl):
    if step >= args.steps:
        break
    with acc.accumulate(model):
        out = model(input_ids=x, labels=x)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
    loss = acc.gather(out.loss.detach()).mean()
    if step % 4 == 0:
        log.info(f"step {step} loss {loss.item():.4f}", main_process_only=True)
acc.wait_for_everyone()
log.info("training complete", main_process_only=True)
acc.end_training()
