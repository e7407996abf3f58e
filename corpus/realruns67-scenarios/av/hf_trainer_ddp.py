"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer under torchrun (DDP, gloo, CPU), offline."""
import argparse
import os

import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

p = argparse.ArgumentParser()
p.add_argument("--out", default="/work/rr67/av/out_hf")
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()

set_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
g = torch.Generator().manual_seed(0)
rows = [{"input_ids": torch.randint(0, 256, (32,), generator=g).tolist()} for _ in range(128)]
ds = Dataset.from_list(rows)


def collate(batch):
    ids = torch.tensor([b["input_ids"] for b in batch])
    return {"input_ids": ids, "labels": ids.clone()}


targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps,
                          logging_steps=3, save_strategy="no", report_to=[], use_cpu=True,
                          ddp_backend="gloo", dataloader_num_workers=0, learning_rate=5e-4,
                          ddp_find_unused_parameters=True)
trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collate)
trainer.train()
if trainer.is_world_process_zero():
    print("final train loss", trainer.state.log_history[-1])
