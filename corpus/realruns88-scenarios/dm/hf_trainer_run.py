"""Tiny GPT-2 trained with the Hugging Face Trainer (offline, model built from config, local toy tokenizer).

Logs a dict every step ({'loss': ...}). Runs under torchrun (DDP, gloo) or plain python.
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import numpy as np
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
p.add_argument("--out", default="/work/rr88/dm/work/hf_out")
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=2e-3)
args = p.parse_args()

VOCAB = 128


class ToyText(Dataset):
    def __init__(self, n, seq=32, seed=0):
        self.n, self.seq, self.seed = n, seq, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 100000 + i)
        start, stride = rng.integers(0, VOCAB), rng.integers(1, 5)
        ids = torch.tensor((start + stride * np.arange(self.seq)) % VOCAB, dtype=torch.long)
        return {"input_ids": ids, "labels": ids.clone(), "attention_mask": torch.ones_like(ids)}


cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)

targs = TrainingArguments(
    output_dir=args.out,
    max_steps=args.steps,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=8,
    learning_rate=args.lr,
    warmup_steps=20,
    logging_steps=1,
    eval_strategy="steps",
    eval_steps=max(1, args.steps // 2),
    save_strategy="steps",
    save_steps=max(1, args.steps // 2),
    save_total_limit=1,
    report_to=[],
    use_cpu=True,
    ddp_backend="gloo" if "WORLD_SIZE" in os.environ else None,
    dataloader_num_workers=0,
    max_grad_norm=1.0,
    disable_tqdm=False,
    seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=ToyText(8 * args.steps * 4),
                  eval_dataset=ToyText(64, seed=1))
trainer.train()
trainer.save_model(os.path.join(args.out, "final"))
