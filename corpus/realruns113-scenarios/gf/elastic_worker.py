"""Elastic (torchrun) worker: per-rank data shards + checkpoint/resume, for --max-restarts scenarios."""
import argparse, datetime, os, sys, time, logging
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--shards", required=True, help="directory with shard-<rank>.pt")
p.add_argument("--ckpt", required=True)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--sleep", type=float, default=0.2)
p.add_argument("--pidfile-dir", default=None, help="write worker pids here (for the ops watchdog)")
p.add_argument("--store-check", action="store_true", help="rank 0 publishes a run config into the store and others read it")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("elastic")
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
if args.pidfile_dir:
    with open(os.path.join(args.pidfile_dir, f"rank{rank}-restart{restart}.pid"), "w") as f:
        f.write(str(os.getpid()))
log.info(f"rank {rank}/{world} up (restart {restart}, pid {os.getpid()})")

shard = torch.load(os.path.join(args.shards, f"shard-{rank}.pt"))
x, y = shard["x"], shard["y"]
log.info(f"rank {rank}: loaded {len(x)} samples")
model = nn.Sequential(nn.Linear(x.shape[1], 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
start = 0
if os.path.exists(args.ckpt):
    ck = torch.load(args.ckpt)
    model.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"]); start = ck["step"] + 1
    log.info(f"rank {rank}: resumed from {args.ckpt} at step {start}")
model = DDP(model)
for step in range(start, args.steps):
    i = (step * 16) % len(x)
    loss = nn.functional.mse_loss(model(x[i:i + 16]), y[i:i + 16])
    opt.zero_grad(); loss.backward(); opt.step()
    time.sleep(args.sleep)
    if step % 5 == 0:
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, args.ckpt)
            log.info(f"step {step} loss {loss.item():.4f} (checkpoint saved)")
dist.barrier()
if rank == 0: log.info("finished all steps")
dist.destroy_process_group()
