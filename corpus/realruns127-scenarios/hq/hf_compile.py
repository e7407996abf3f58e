"""Tiny GPT-2 (built from a config, no download) trained with torch.compile on CPU.
--fault none: healthy;  --fault resize: resize_token_embeddings to a new vocab mid-run."""
import argparse, os, time, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--dynamic", default="none")
p.add_argument("--fullgraph", action="store_true")
args = p.parse_args()
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128)
model = GPT2LMHeadModel(cfg)
model.config.use_cache = True
print(f"GPT2 params: {sum(p.numel() for p in model.parameters())/1e6:.2f}M")
kw = {} if args.dynamic == "none" else {"dynamic": args.dynamic == "true"}
if args.fullgraph:
    kw["fullgraph"] = True
cm = torch.compile(model, **kw)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
t0 = time.time()
for step in range(args.steps):
    ids = torch.randint(0, 512, (4, args.seq))
    mask = torch.ones_like(ids)
    mask[:, : step % 4] = 0  # left padding of varying width
    out = cm(input_ids=ids, attention_mask=mask, labels=ids)
    out.loss.backward()
    opt.step(); opt.zero_grad()
    print(f"step {step:3d} | loss {out.loss.item():.4f} | {time.time()-t0:6.1f}s", flush=True)
print("done")
