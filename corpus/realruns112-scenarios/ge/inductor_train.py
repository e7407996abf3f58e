"""Tiny GPT-2 (built from a config, no download) trained with torch.compile (inductor,
CPU C++ codegen) under DDP/gloo or single process. The toolchain / cache
configuration comes from the environment the run is launched with.

  --tqdm             show a tqdm progress bar
  --cache-dir DIR    set TORCHINDUCTOR_CACHE_DIR before compiling
  --recompile-warn   feed a changing sequence length (dynamic-shape recompiles)
"""
import argparse, os, time
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--cache-dir", default=None)
p.add_argument("--recompile-warn", action="store_true")
p.add_argument("--model", default="mlp", choices=["mlp", "gpt2"])
args = p.parse_args()
if args.cache_dir:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = args.cache_dir

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))

torch.manual_seed(0)
if args.model == "gpt2":
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
    model = GPT2LMHeadModel(cfg)
else:
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 8))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
cmodel = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc=f"train", dynamic_ncols=False, ncols=90)
g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in it:
    if args.model == "gpt2":
        L = 16 + (step % 5) * 4 if args.recompile_warn else 32
        ids = torch.randint(0, 256, (4, L), generator=g)
        out = cmodel(input_ids=ids, labels=ids)
        loss = out.loss
    else:
        L = 8 + step if args.recompile_warn else 16
        x = torch.randn(L, 32, generator=g)
        loss = cmodel(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step == 0:
        print(f"[rank{rank}] first step (incl. compile) took {time.time()-t0:.1f}s", flush=True)
    if step % 5 == 0 and not args.tqdm:
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
print(f"[rank{rank}] done: {args.steps} steps, final loss {loss.item():.4f}", flush=True)
if distributed:
    dist.destroy_process_group()
