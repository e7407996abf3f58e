"""Tiny GPT-2 trained with the HF Trainer; checkpoints go to --out (may be a small tmpfs)."""
import argparse, os
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from torch.utils.data import Dataset

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--save-every", type=int, default=20)
p.add_argument("--vocab", type=int, default=2000)
a = p.parse_args()

class Toks(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, a.vocab, (32,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}

cfg = GPT2Config(vocab_size=a.vocab, n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=a.out, max_steps=a.max_steps, per_device_train_batch_size=8,
                         logging_steps=5, save_steps=a.save_every, save_strategy="steps", report_to=[],
                         use_cpu=True, dataloader_num_workers=0, disable_tqdm=False)
Trainer(model=model, args=args, train_dataset=Toks()).train()
print("done training", flush=True)
