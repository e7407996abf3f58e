#!/usr/bin/env python
"""Tiny GPT-2 language-model fine-tune with the Hugging Face Trainer, fully offline.

Flags select the configuration problem to reproduce (learning rate typo, metric name, ...).
Works as a single process, under torchrun, or under accelerate launch (gloo on CPU).
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

p = argparse.ArgumentParser()
p.add_argument("--out", default="/work/rr71/bh/tmp_hf_out")
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--max-grad-norm", type=float, default=1.0)
p.add_argument("--nan-filter", type=int, default=1)
p.add_argument("--eval-steps", type=int, default=0)
p.add_argument("--best-metric", default="")
p.add_argument("--fp16-adam-eps", type=float, default=1e-8)
p.add_argument("--optim", default="adamw_torch")
p.add_argument("--disable-tqdm", type=int, default=1)
p.add_argument("--ddp-backend", default="")
p.add_argument("--legacy-args", action="store_true", help="args copied from an older training recipe")
p.add_argument("--corrupt-rank", type=int, default=-1, help="rank whose data shard has out-of-pattern text")
args = p.parse_args()

set_seed(0)
VOCAB = 128
cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=0, eos_token_id=1)
model = GPT2LMHeadModel(cfg)


def make_split(n, seed):
    rng = np.random.default_rng(seed)
    # a learnable "language": arithmetic progressions of token ids
    start = rng.integers(2, VOCAB, size=n)
    step = rng.integers(1, 4, size=n)
    ids = (start[:, None] + step[:, None] * np.arange(32)[None, :]) % (VOCAB - 2) + 2
    return Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})


train = make_split(2048, 1)
evals = make_split(128, 2)

legacy = dict(overwrite_output_dir=True) if args.legacy_args else {}
targs = TrainingArguments(
    **legacy,
    output_dir=args.out,
    per_device_train_batch_size=args.bs,
    per_device_eval_batch_size=args.bs,
    learning_rate=args.lr,
    max_steps=args.steps,
    warmup_steps=args.warmup,
    logging_steps=5,
    max_grad_norm=args.max_grad_norm,
    logging_nan_inf_filter=bool(args.nan_filter),
    eval_strategy="steps" if args.eval_steps else "no",
    eval_steps=args.eval_steps or None,
    save_strategy="steps" if args.eval_steps else "no",
    save_steps=args.eval_steps or 500,
    load_best_model_at_end=bool(args.best_metric),
    metric_for_best_model=args.best_metric or None,
    report_to="none",
    use_cpu=True,
    ddp_backend=args.ddp_backend or None,
    dataloader_num_workers=0,
    disable_tqdm=bool(args.disable_tqdm),
    optim=args.optim,
    adam_epsilon=args.fp16_adam_eps,
    seed=0,
)

trainer = Trainer(model=model, args=targs, train_dataset=train, eval_dataset=evals if args.eval_steps else None)
result = trainer.train()
print(result)
if args.eval_steps:
    print(trainer.evaluate())
