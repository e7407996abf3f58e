#!/usr/bin/env python
"""Tiny GPT-2 fine-tune with the HF Trainer on an in-memory dataset."""
import argparse, os
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class ToyLM(torch.utils.data.Dataset):
    def __init__(self, n=64, seq=16, vocab=64):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, seq), generator=g)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="work/hf_out")
    p.add_argument("--eval-strategy", default="steps")
    p.add_argument("--save-strategy", default="steps")
    p.add_argument("--load-best", action="store_true")
    p.add_argument("--max-steps", type=int, default=20)
    a = p.parse_args()
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_layer=2, n_head=2, n_embd=64, n_positions=32))
    args = TrainingArguments(
        output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
        max_steps=a.max_steps, eval_strategy=a.eval_strategy, eval_steps=10,
        save_strategy=a.save_strategy, save_steps=10, load_best_model_at_end=a.load_best,
        logging_steps=5, report_to=[], use_cpu=True, dataloader_num_workers=0,
    )
    tr = Trainer(model=model, args=args, train_dataset=ToyLM(), eval_dataset=ToyLM(16))
    tr.train()
    print("train done")


if __name__ == "__main__":
    main()
