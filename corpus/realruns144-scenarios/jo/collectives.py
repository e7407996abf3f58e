"""Manual data-parallel loop (no DDP wrapper): gradients averaged with explicit all_reduce calls.

--mode mismatch : --odd-rank builds its model from a config with an extra hidden layer (stale config file)
--mode lockwait : --odd-rank waits for a dataset-cache lock that a stale process still holds; rank 0 checks
                  liveness with monitored_barrier
"""
import argparse, os, time, datetime, json, fcntl
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="mismatch")
p.add_argument("--odd-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--cfg-dir", default="configs")
p.add_argument("--lock", default="cache/.dataset.lock")
a = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
cfg_path = os.path.join(a.cfg_dir, f"node{rank}.json")
cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {"layers": 2, "width": 32}
print(f"[rank {rank}] model config {cfg_path}: {cfg}", flush=True)
layers = []
d = 16
for _ in range(cfg["layers"]):
    layers += [nn.Linear(d, cfg["width"]), nn.Tanh()]
    d = cfg["width"]
layers.append(nn.Linear(d, 1))
model = nn.Sequential(*layers)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

if a.mode == "lockwait":
    os.makedirs(os.path.dirname(a.lock), exist_ok=True)
    if rank == a.odd_rank:
        print(f"[rank {rank}] acquiring dataset cache lock {a.lock}", flush=True)
        fd = open(a.lock, "w")
        fcntl.flock(fd, fcntl.LOCK_EX)
        print(f"[rank {rank}] lock acquired", flush=True)
    else:
        print(f"[rank {rank}] using cached dataset", flush=True)
    if rank == 0:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=15), wait_all_ranks=True)
    else:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=15))
    print(f"[rank {rank}] passed start-up barrier", flush=True)

for step in range(a.steps):
    x = torch.randn(32, 16)
    y = x.sum(1, keepdim=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    for prm in model.parameters():
        dist.all_reduce(prm.grad)
        prm.grad /= world
    opt.step()
    if step % 5 == 0:
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
print(f"[rank {rank}] done", flush=True)
dist.destroy_process_group()
