#!/usr/bin/env python
"""Tiny GPT-2 causal-LM training with the Hugging Face Trainer (launched by `accelerate launch`, CPU/gloo).

Scenario family "hf_trainer". Flags:
  --fault none          healthy run
  --fault best-ckpt     load_best_model_at_end=True with eval every N steps but saving once per epoch
"""
import argparse
import os

import numpy as np
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, default_data_collator

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--max-steps", type=int, default=150)
p.add_argument("--out", default="/work/rr80/ci/out/hf")
a = p.parse_args()

torch.set_num_threads(1)
rng = np.random.default_rng(0)
ids = rng.integers(0, 800, size=(3000, 33)).tolist()
train = Dataset.from_dict({"input_ids": [r[:32] for r in ids[:2800]], "labels": [r[:32] for r in ids[:2800]]})
evald = Dataset.from_dict({"input_ids": [r[:32] for r in ids[2800:]], "labels": [r[:32] for r in ids[2800:]]})

model = GPT2LMHeadModel(GPT2Config(vocab_size=800, n_positions=64, n_embd=64, n_layer=2, n_head=4))

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=16,
          max_steps=a.max_steps, logging_steps=5, learning_rate=5e-4, warmup_steps=20,
          eval_strategy="steps", eval_steps=50, save_strategy="steps", save_steps=75,
          report_to="none", use_cpu=True, dataloader_num_workers=0, disable_tqdm=False, seed=0)
if a.fault == "best-ckpt":
    kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="epoch")
args = TrainingArguments(**kw)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evald,
                  data_collator=default_data_collator)
trainer.train()
print(trainer.evaluate())
