"""accelerate-driven training of a tiny GPT-2 with mixed precision / dynamo settings from the launcher.

--fault:
  none        healthy
  eval-shape  eval loop compiled with dynamic=False: last partial batch changes the shape (recompiles)
"""
import argparse
import math
import os
import time

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel
import logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("train")

acc = Accelerator()
logger.info(acc.state, main_process_only=False)
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
data = torch.randint(0, 256, (64, 32))
loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)
model, opt, loader = acc.prepare(model, opt, loader)

step = 0
t0 = time.time()
while step < args.steps:
    for batch in loader:
        with acc.accumulate(model):
            out = model(input_ids=batch, labels=batch)
            acc.backward(out.loss)
            opt.step()
            opt.zero_grad()
        step += 1
        loss = acc.gather(out.loss.detach()).mean().item()
        logger.info(f"step {step} loss {loss:.4f} ppl {math.exp(loss):.1f} {time.time()-t0:.1f}s")
        if step >= args.steps:
            break
acc.wait_for_everyone()
logger.info("training complete")
acc.end_training()
