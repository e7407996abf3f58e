"""Tiny GPT-2 (built from a config, no download) trained with the HF Trainer on a synthetic token corpus.

--lr is passed straight to TrainingArguments.learning_rate (a YAML typo like 5e0 for 5e-5 goes through).
"""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--out", default="/tmp/dd_hf_out")
p.add_argument("--warmup", type=int, default=0)
args = p.parse_args()


class Synthetic(Dataset):
    """Sequences from a small Markov chain over 128 tokens."""
    def __init__(self, n=512, T=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        trans = torch.softmax(torch.randn(128, 128, generator=g) * 3, -1)
        seqs = torch.empty(n, T, dtype=torch.long)
        seqs[:, 0] = torch.randint(0, 128, (n,), generator=g)
        for t in range(1, T):
            seqs[:, t] = torch.multinomial(trans[seqs[:, t - 1]], 1, generator=g).squeeze(1)
        self.seqs = seqs

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return {"input_ids": self.seqs[i], "labels": self.seqs[i].clone()}


cfg = GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=16, learning_rate=args.lr,
                          max_steps=args.max_steps, logging_steps=5, save_strategy="no", report_to=[],
                          use_cpu=True, dataloader_num_workers=0, warmup_steps=args.warmup,
                          ddp_backend="gloo" if "WORLD_SIZE" in os.environ else None, disable_tqdm=False)
trainer = Trainer(model=model, args=targs, train_dataset=Synthetic())
res = trainer.train()
if trainer.is_world_process_zero():
    print("train result:", res.metrics)
