"""Mixed-precision bugs on CPU. --fault: maskfill (attention mask filled with -1e9 on fp16 scores) |
half_params (model.half() + GradScaler) ; --bad-rank selects which rank takes the fp16 path."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
p = argparse.ArgumentParser()
p.add_argument("--fault", default="maskfill"); p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--steps", type=int, default=10)
a = p.parse_args()
dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30)); rank = dist.get_rank()
else:
    rank = 0
torch.manual_seed(0)
bad = a.bad_rank < 0 or rank == a.bad_rank
class Attn(nn.Module):
    def __init__(self, d=32):
        super().__init__(); self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d); self.d = d
    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, -1)
        s = q @ k.transpose(-1, -2) / self.d ** 0.5
        s = s.masked_fill(~mask, -1e9)
        return self.o(torch.softmax(s, -1) @ v)
m = nn.Sequential(nn.Identity())
net = Attn()
if a.fault == "half_params" and bad:
    net = net.half()   # "save memory": cast the model to fp16 before building the scaler
if dist_on:
    net = nn.parallel.DistributedDataParallel(net) if a.fault != "half_params" else net
opt = torch.optim.AdamW(net.parameters(), 1e-3)
scaler = torch.amp.GradScaler("cpu")
print(f"[rank {rank}] fault={a.fault} param dtype={next(net.parameters()).dtype}", flush=True)
for step in range(a.steps):
    x = torch.randn(4, 12, 32); mask = torch.tril(torch.ones(12, 12, dtype=torch.bool))
    use_fp16 = (a.fault == "maskfill" and bad and step >= 3)   # fp16 autocast switched on after warm-up
    if a.fault == "half_params" and bad:
        x = x.half()
    with torch.autocast("cpu", dtype=torch.float16 if use_fp16 else torch.bfloat16, enabled=use_fp16 or a.fault == "half_params"):
        out = net(x, mask)
        loss = (out.float() ** 2).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt); scaler.update()
    print(f"[rank {rank}] step {step} loss {loss.item():.5f} scale {scaler.get_scale():.0f} amp={'fp16' if use_fp16 else 'off'}", flush=True)
    time.sleep(0.05)
print(f"[rank {rank}] done", flush=True)
