"""Single-process training of a tiny GPT-2 (built from config) with tqdm; checkpoints to --out."""
import argparse, os, sys, time, warnings, logging
import torch
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=200)
p.add_argument("--out", default="/tmp/rr100fe_single")
p.add_argument("--save-every", type=int, default=50)
p.add_argument("--tmp-dir", default="")
p.add_argument("--sleep", type=float, default=0.05)
a = p.parse_args()
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
os.makedirs(a.out, exist_ok=True)
print(f"model params: {sum(p.numel() for p in model.parameters())/1e6:.2f}M, saving to {a.out}", flush=True)
bar = tqdm(range(a.steps), desc="train", dynamic_ncols=False, ncols=100, mininterval=0.5)
for step in bar:
    ids = torch.randint(0, 512, (8, 64))
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad(); out.loss.backward(); opt.step()
    bar.set_postfix(loss=f"{out.loss.item():.3f}")
    if (step + 1) % a.save_every == 0:
        path = os.path.join(a.out, f"checkpoint-{step+1}")
        if a.tmp_dir:
            # write to scratch then move into place (atomic publish)
            tmp = os.path.join(a.tmp_dir, f"checkpoint-{step+1}.tmp")
            model.save_pretrained(tmp); os.rename(tmp, path)
        else:
            model.save_pretrained(path)
        bar.write(f"saved {path}")
    time.sleep(a.sleep)
bar.close()
print("done", flush=True)
