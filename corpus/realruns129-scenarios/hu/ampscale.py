"""fp16 autocast + GradScaler on CPU; --raw-features skips input normalisation (features in the 1e4 range)."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
p = argparse.ArgumentParser()
p.add_argument("--raw-features", action="store_true")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--every", type=int, default=5)
a = p.parse_args()
rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
g = torch.Generator().manual_seed(rank)
mean, std = 3000.0, 800.0
for step in range(1, a.steps + 1):
    x = mean + std * torch.randn(256, 16, generator=g)
    y = ((x - mean) / std).sum(1, keepdim=True) * 0.1
    if not a.raw_features:
        x = (x - mean) / std
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(x)
        loss = nn.functional.mse_loss(out.float(), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step % a.every == 0 or step == 1:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} loss_scale {scaler.get_scale():.6g}", flush=True)
print(f"[rank {rank}] done", flush=True)
if world > 1:
    dist.destroy_process_group()
