"""Plain single-process training of a tiny GPT-2 built from a config (no downloads), tqdm progress, DataLoader workers."""
import os, sys, time, argparse, warnings
import torch
from torch.utils.data import Dataset, DataLoader
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=40); p.add_argument('--workers', type=int, default=3)
p.add_argument('--amp', action='store_true')
args = p.parse_args()

class Toks(Dataset):
    def __init__(self, n=512, L=32, vocab=256):
        g = torch.Generator().manual_seed(0); self.x = torch.randint(0, vocab, (n, L), generator=g)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return {'input_ids': self.x[i], 'labels': self.x[i]}

cfg = GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
print(f"model params: {sum(q.numel() for q in model.parameters())/1e6:.2f}M", flush=True)
dl = DataLoader(Toks(), batch_size=16, shuffle=True, num_workers=args.workers, pin_memory=True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler(enabled=args.amp)
model.train()
step = 0
pbar = tqdm(total=args.steps, desc='train', ncols=100)
while step < args.steps:
    for batch in dl:
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=args.amp):
            out = model(**batch)
        scaler.scale(out.loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
        step += 1; pbar.update(1); pbar.set_postfix(loss=f"{out.loss.item():.3f}")
        if step >= args.steps: break
pbar.close()
os.makedirs('/work/rr104/fo/ckpt', exist_ok=True)
model.save_pretrained('/work/rr104/fo/ckpt/gpt2-tiny')
print("saved to /work/rr104/fo/ckpt/gpt2-tiny; done", flush=True)
