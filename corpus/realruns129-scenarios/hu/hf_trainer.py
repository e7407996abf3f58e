"""Tiny GPT-2 causal LM trained with the HF Trainer on a locally generated token stream."""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--max-steps", type=int, default=60)
p.add_argument("--outdir", default="hf_out")
p.add_argument("--fp-warmup", type=int, default=0)
p.add_argument("--sched", default="linear")
a = p.parse_args()

class Toks(Dataset):
    def __init__(self, n=4000, L=32, V=128):
        g = torch.Generator().manual_seed(0)
        base = torch.randint(0, V, (n, 1), generator=g)
        step = torch.randint(1, 4, (n, 1), generator=g)
        self.x = (base + step * torch.arange(L)) % V
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)
kw = dict(output_dir=a.outdir, per_device_train_batch_size=16, max_steps=a.max_steps, learning_rate=a.lr,
          logging_steps=5, save_strategy="no", report_to=[], use_cpu=True, lr_scheduler_type=a.sched,
          warmup_steps=a.fp_warmup, dataloader_num_workers=0, disable_tqdm=False, logging_nan_inf_filter=False,
          max_grad_norm=1e9 if a.fault == "noclip" else 1.0)
args = TrainingArguments(**kw)
tr = Trainer(model=model, args=args, train_dataset=Toks())
tr.train()
print("done training")
