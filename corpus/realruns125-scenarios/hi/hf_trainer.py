"""Tiny GPT-2 trained with the Hugging Face Trainer on a locally generated corpus.

--fault none | huge-lr (lr typo, no clipping -> loss becomes nan) | zero-sched (scheduler built with
num_training_steps computed as 0 -> lr 0 throughout) | no-warmup (lr too high, loss spikes and stays)
"""
import argparse
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from torch.utils.data import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          get_linear_schedule_with_warmup)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--max-steps", type=int, default=60)
p.add_argument("--logging-steps", type=int, default=5)
p.add_argument("--outdir", default="out_hf")
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--accum", type=int, default=1)
args = p.parse_args()

V, T = 96, 32


class Corpus(Dataset):
    def __init__(self, n=512, seed=0):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, V, (n, 1), generator=g)
        step = torch.randint(1, 6, (n, 1), generator=g)
        s = (start + step * torch.arange(T)) % V
        noise = torch.rand(s.shape, generator=g) < 0.2
        self.data = torch.where(noise, torch.randint(0, V, s.shape, generator=g), s)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        x = self.data[i]
        return {"input_ids": x, "labels": x.clone(), "attention_mask": torch.ones_like(x)}


cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=4,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
if args.grad_ckpt:
    model.gradient_checkpointing_enable()

ta = dict(output_dir=args.outdir, per_device_train_batch_size=8, learning_rate=args.lr,
          max_steps=args.max_steps, logging_steps=args.logging_steps, report_to="none",
          save_strategy="no", use_cpu=True, logging_nan_inf_filter=False, disable_tqdm=False,
          dataloader_num_workers=0, seed=42, gradient_accumulation_steps=args.accum,
          warmup_steps=5, lr_scheduler_type="cosine")
optimizers = (None, None)
train_ds = Corpus()
if args.fault == "huge-lr":
    ta["max_grad_norm"] = 0.0
if args.fault == "no-warmup":
    ta.update(warmup_steps=0, lr_scheduler_type="constant", max_grad_norm=0.0)
if args.fault == "zero-sched":
    world = int(os.environ.get("WORLD_SIZE", 1))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # steps per epoch computed with integer division by (batch * accumulation * world) of a
    # count that is already per device -> 0 for this small dataset
    steps_per_epoch = (len(train_ds) // (8 * world)) // (8 * args.accum * world)
    num_training_steps = steps_per_epoch * 1
    sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=0, num_training_steps=num_training_steps)
    optimizers = (opt, sched)

trainer = Trainer(model=model, args=TrainingArguments(**ta), train_dataset=train_ds, optimizers=optimizers)
trainer.train()
