"""Tiny GPT-2 LM trained with the HF Trainer on locally built token data (no downloads)."""
import argparse, os
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr152/km/hf-out")
p.add_argument("--steps", type=int, default=30)
a = p.parse_args()

class Toks(torch.utils.data.Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0); self.x = torch.randint(0, 128, (n, 32), generator=g)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return {"input_ids": self.x[i], "labels": self.x[i]}

model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=64, n_layer=2, n_head=2, n_embd=64))
kw = dict(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, logging_steps=5,
          report_to=[], save_strategy="steps", save_steps=1000, use_cpu=True, ddp_backend="gloo")
if a.fault == "best-no-eval":
    # keep the best checkpoint by eval loss ... but evaluation was never switched on
    kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", eval_strategy="no")
args = TrainingArguments(**kw)
tr = Trainer(model=model, args=args, train_dataset=Toks(), eval_dataset=Toks(64))
tr.train()
