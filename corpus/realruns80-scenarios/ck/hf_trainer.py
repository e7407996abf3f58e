"""HF Trainer family: tiny GPT-2 built from a config, synthetic token data, no downloads.
--lr is parsed from a string like a YAML config would give it."""
import argparse, os, sys, math
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--lr", default="5e-4")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--out", default="/tmp/ck_hf_out")
p.add_argument("--warmup", type=int, default=0)
p.add_argument("--clip", type=float, default=1.0)
args = p.parse_args()

class Toks(Dataset):
    def __init__(s, n=512, T=32, V=128, seed=0):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, V, (n, 1), generator=g); step = torch.randint(1, 5, (n, 1), generator=g)
        s.x = (start + step * torch.arange(T)) % V
        noise = torch.rand(s.x.shape, generator=g) < 0.15
        s.x = torch.where(noise, torch.randint(0, V, s.x.shape, generator=g), s.x)
    def __len__(s): return len(s.x)
    def __getitem__(s, i): return {"input_ids": s.x[i], "labels": s.x[i].clone()}

cfg = GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg)
ta = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps,
                       learning_rate=float(args.lr), warmup_steps=args.warmup, logging_steps=5,
                       max_grad_norm=args.clip, save_strategy="no", report_to="none", use_cpu=True,
                       dataloader_num_workers=0, seed=0, disable_tqdm=False)
trainer = Trainer(model=model, args=ta, train_dataset=Toks(), eval_dataset=Toks(64, seed=1))
trainer.train()
m = trainer.evaluate()
print(f"eval_loss={m['eval_loss']:.4f} perplexity={math.exp(min(m['eval_loss'], 50)):.2f}")
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
