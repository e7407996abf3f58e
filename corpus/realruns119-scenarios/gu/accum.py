"""DDP with gradient accumulation via no_sync()."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "unused", "ckptdir", "nan", "divergent-accum"])
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--accum", type=int, default=4)
p.add_argument("--out-dir", default="/tmp/gu_ckpt")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
a = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 4)
        self.aux_head = nn.Linear(64, 4)   # only used when aux loss is on
    def forward(self, x, use_aux=True):
        h = self.enc(x)
        out = self.head(h)
        if use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out

model = DDP(Net(), find_unused_parameters=a.find_unused)
opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
g = torch.Generator().manual_seed(100 + rank)
X = torch.randn(4096, 32, generator=g); Y = torch.randint(0, 4, (4096,), generator=g)
lossf = nn.CrossEntropyLoss()
print(f"[rank{rank}] world={world} accum={a.accum} micro_bs=16 effective_bs={16*a.accum*world}", flush=True)
if a.fault == "ckptdir":
    os.makedirs(a.out_dir, exist_ok=True)
idx = 0
for step in range(a.steps):
    t0 = time.time()
    use_aux = not (a.fault == "unused" and step >= a.at_step)  # aux loss schedule: switched off after warmup
    accum = a.accum
    if a.fault == "divergent-accum" and rank == a.bad_rank:
        accum = a.accum + 1   # this rank read a different config value
    tot = 0.0
    for micro in range(accum):
        xb, yb = X[idx:idx+16], Y[idx:idx+16]; idx += 16
        if a.fault == "nan" and rank == a.bad_rank and step == a.at_step:
            xb = xb.clone(); xb[3, 5] = float("inf")   # corrupt feature from preprocessing
        ctx = model.no_sync() if micro < accum - 1 else torch.enable_grad()
        with ctx:
            out = model(xb, use_aux=use_aux)
            loss = lossf(out, yb) / accum
            loss.backward()
        tot += loss.item()
    if not torch.isfinite(torch.tensor(tot)):
        raise RuntimeError(f"rank {rank}: non-finite loss {tot} at step {step}")
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad(set_to_none=True)
    print(f"[rank{rank}] step {step:3d} loss {tot:.4f} lr {a.lr:.3g} {(time.time()-t0)*1000:.1f}ms", flush=True)
    if a.fault == "ckptdir" and step == a.at_step:
        if rank == 0:
            path = os.path.join(a.out_dir, f"step_{step}", "model.pt")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            print(f"[rank0] saved {path}", flush=True)
        dist.barrier()
dist.barrier()
if rank == 0:
    print("training complete", flush=True)
dist.destroy_process_group()
