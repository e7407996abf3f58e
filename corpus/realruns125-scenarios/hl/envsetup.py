"""Family: launch environment (backend, device, world size, rendezvous env).
  --backend gloo|nccl        process-group backend
  --device auto|cuda         'cuda' = pin each rank to cuda:LOCAL_RANK (GPU recipe)
  --world-size N             pass an explicit world size (from a cluster config) to init_process_group
"""
import argparse, os, sys, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from _core import setup_logging, TinyNet, make_data

p = argparse.ArgumentParser()
p.add_argument("--backend", default="gloo")
p.add_argument("--device", default="auto")
p.add_argument("--world-size", type=int, default=-1)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--warmup-sched", action="store_true")
args = p.parse_args()

local_rank = int(os.environ.get("LOCAL_RANK", 0))
print(f"[startup] pid={os.getpid()} LOCAL_RANK={os.environ.get('LOCAL_RANK')} RANK={os.environ.get('RANK')} "
      f"WORLD_SIZE={os.environ.get('WORLD_SIZE')} MASTER_ADDR={os.environ.get('MASTER_ADDR')} "
      f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}", flush=True)
kw = {}
if args.world_size > 0:
    kw = dict(world_size=args.world_size, rank=int(os.environ.get("RANK", 0)))
dist.init_process_group(args.backend, timeout=timedelta(seconds=args.pg_timeout), **kw)
rank, ws = dist.get_rank(), dist.get_world_size()
log = setup_logging(rank)

if args.device == "cuda" or (args.device == "auto" and os.environ.get("CUDA_VISIBLE_DEVICES")):
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)
else:
    device = torch.device("cpu")
log.info("rank %d/%d on %s", rank, ws, device)

torch.manual_seed(0)
model = TinyNet().to(device)
model = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5) if args.warmup_sched else None
if sched is not None:
    sched.step()  # "advance warmup once before training" (order bug, harmless)
x, y = make_data(seed=rank)
for step in range(args.steps):
    xb, yb = x[step*32:(step+1)*32].to(device), y[step*32:(step+1)*32].to(device)
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(); loss.backward(); opt.step()
    if sched is not None:
        sched.step()
    if step % 2 == 0:
        log.info("step %d loss %.4f", step, loss.item())
    time.sleep(0.1)
dist.barrier()
log.info("done")
dist.destroy_process_group()
