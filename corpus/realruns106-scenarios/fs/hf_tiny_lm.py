"""Tiny GPT-2 trained with the HF Trainer on locally generated token data (no downloads)."""
import argparse, os
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--out", default="out/hf")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--seq", type=int, default=32)
a = p.parse_args()

class Toks(Dataset):
    def __init__(self, n, seq, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        base = torch.randint(0, vocab, (n, seq), generator=g)
        self.ids = torch.where(torch.arange(seq) % 2 == 0, base, (base + 1) % vocab)
    def __len__(self): return len(self.ids)
    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i], "attention_mask": torch.ones_like(self.ids[i])}

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=300, n_positions=64)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, logging_steps=5,
                         learning_rate=3e-3, report_to=[], save_strategy="no", use_cpu=True, ddp_backend="gloo",
                         ddp_find_unused_parameters=a.find_unused, ddp_timeout=60, disable_tqdm=False,
                         dataloader_num_workers=0)
tr = Trainer(model=model, args=args, train_dataset=Toks(512, a.seq, 300, 0), eval_dataset=Toks(64, a.seq, 300, 1))
tr.train()
m = tr.evaluate()
if tr.is_world_process_zero():
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()})
