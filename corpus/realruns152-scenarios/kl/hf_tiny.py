"""Tiny GPT-2 language model trained with the HF Trainer on a locally built character dataset."""
import argparse, os, sys, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback
from torch.utils.data import Dataset

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=30)
p.add_argument('--outdir', default='hf_out')
p.add_argument('--bad-eval', action='store_true')
args = p.parse_args()

text = ('the quick brown fox jumps over the lazy dog. ' * 200)
vocab = sorted(set(text)); stoi = {c: i for i, c in enumerate(vocab)}
ids = torch.tensor([stoi[c] for c in text])

class Chunks(Dataset):
    def __init__(self, n, L=32): self.n, self.L = n, L
    def __len__(self): return self.n
    def __getitem__(self, i):
        s = (i * 7) % (len(ids) - self.L - 1)
        x = ids[s:s + self.L]
        return {'input_ids': x, 'labels': x.clone(), 'attention_mask': torch.ones_like(x)}

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_embd=64, n_head=2, n_positions=64)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(output_dir=args.outdir, max_steps=args.steps, per_device_train_batch_size=8,
                          per_device_eval_batch_size=8, logging_steps=5, eval_strategy='steps', eval_steps=10,
                          save_strategy='steps', save_steps=15, report_to=[], learning_rate=3e-3,
                          dataloader_num_workers=0, use_cpu=True, logging_nan_inf_filter=False)
trainer = Trainer(model=model, args=targs, train_dataset=Chunks(400), eval_dataset=Chunks(32))
trainer.train()
print('final eval:', trainer.evaluate())
