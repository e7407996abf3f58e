"""Tiny GPT-2 (built from a config, nothing downloaded) trained with Accelerate/DDP on gloo.

--fault none          healthy; gradient checkpointing on, use_cache left at the config default
--fault eval-cache    evaluation reuses past_key_values across consecutive eval batches (streaming-eval bug);
                      only rank 0 evaluates, the others wait at a barrier
"""
import argparse
import os
import sys
import time

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--eval-every", type=int, default=6)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--seq-len", type=int, default=32)
args = p.parse_args()

acc = Accelerator(cpu=True)
torch.manual_seed(0)
tok = CharTokenizer(CORPUS)
ids = tok.encode(CORPUS)
T = args.seq_len
chunks = [ids[i:i + T] for i in range(0, len(ids) - T, T)]
train = torch.tensor(chunks[:-16])
val = torch.tensor(chunks[-16:])

cfg = GPT2Config(vocab_size=tok.vocab_size, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
if args.grad_ckpt:
    model.gradient_checkpointing_enable()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train), batch_size=4, shuffle=True)
model, opt, loader = acc.prepare(model, opt, loader)
acc.print(f"GPT2 tiny: {sum(p.numel() for p in model.parameters())} params, n_positions={cfg.n_positions}, "
          f"world={acc.num_processes}, grad_ckpt={args.grad_ckpt}")


@torch.no_grad()
def evaluate(m):
    m.eval()
    past = None
    tot, n = 0.0, 0
    for i in range(0, len(val), 4):
        xb = val[i:i + 4]
        out = m(input_ids=xb, labels=xb, past_key_values=past, use_cache=True)
        past = out.past_key_values  # keep the cache warm between batches
        tot += out.loss.item()
        n += 1
    m.train()
    return tot / n


step = 0
bar = tqdm(total=args.steps, disable=not acc.is_local_main_process, desc="train", dynamic_ncols=False, ncols=90)
model.train()
while step < args.steps:
    for (xb,) in loader:
        out = model(input_ids=xb, labels=xb)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{out.loss.item():.3f}")
        if step % args.eval_every == 0:
            if args.fault == "eval-cache":
                if acc.is_main_process:
                    vl = evaluate(acc.unwrap_model(model))
                    acc.print(f"\nstep {step}: val_loss {vl:.4f}")
                acc.wait_for_everyone()
            else:
                vl = evaluate(acc.unwrap_model(model)) if False else None
                acc.print(f"\nstep {step}: train_loss {out.loss.item():.4f}")
        if step >= args.steps:
            break
bar.close()
acc.wait_for_everyone()
acc.print("training complete")
acc.end_training()
