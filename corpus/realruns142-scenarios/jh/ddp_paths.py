"""Tiny DDP regression trainer used for path / env / config start-up faults.
Flags: --fault {none,data-path,ckpt-path,weights-only,config-ckpt,empty-glob,init-twice,model-cfg,backend-env}
       --fault-rank R  (which rank carries the misconfiguration)"""
import argparse, glob, logging, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--data-root", default="/work/rr142/jh/data")
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--tslog", action="store_true")
p.add_argument("--single", action="store_true", help="single-process run without a launcher")
a = p.parse_args()

if a.tslog:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("train")

def build_model(hidden):
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

def setup():
    backend = os.environ.get("DIST_BACKEND", "gloo")
    if a.single:
        os.environ.setdefault("RANK", "0"); os.environ.setdefault("WORLD_SIZE", "1")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "46921")
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=30))
    return dist.get_rank(), dist.get_world_size()

def main():
    rank, world = setup()
    log.info(f"[rank{rank}] init done world_size={world} backend={dist.get_backend()}")
    if a.fault == "init-twice" and rank == a.fault_rank:
        # helper from a utils module that "makes sure" distributed is set up
        dist.init_process_group(backend="gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    # data: one shard per rank
    shard_dir = a.data_root
    if a.fault == "data-path" and rank == a.fault_rank:
        shard_dir = os.environ.get("DATA_DIR", a.data_root)
    if a.fault == "empty-glob":
        files = sorted(glob.glob(os.path.join(shard_dir, "train-*.pt")))
        if rank == a.fault_rank:
            files = sorted(glob.glob(os.path.join(shard_dir, "train_*.pt")))
        xs = [torch.load(f)["x"] for f in files]; ys = [torch.load(f)["y"] for f in files]
        ds = TensorDataset(torch.cat(xs) if xs else torch.empty(0, 16), torch.cat(ys) if ys else torch.empty(0, 1))
    else:
        shard = torch.load(os.path.join(shard_dir, f"train-{rank:05d}-of-{world:05d}.pt"))
        ds = TensorDataset(shard["x"], shard["y"])
    log.info(f"[rank{rank}] loaded {len(ds)} samples from {shard_dir}")
    hidden = a.hidden
    if a.fault == "model-cfg" and rank == a.fault_rank:
        hidden = int(os.environ.get("HIDDEN", a.hidden))
    model = build_model(hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if a.resume:
        path = a.resume
        if a.fault == "weights-only":
            ck = torch.load(path)
        elif a.fault == "no-map-location":
            ck = torch.load(path, weights_only=False)
        else:
            ck = torch.load(path, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        log.info(f"[rank{rank}] resumed from {path} at step {start}")
    ddp = DDP(model)
    dl = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds) if world > 1 else None, shuffle=(world == 1))
    step = start
    while step < a.steps:
        for x, y in dl:
            loss = nn.functional.mse_loss(ddp(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 5 == 0:
                log.info(f"[rank{rank}] step {step} loss {loss.item():.4f}")
            if step >= a.steps:
                break
    if rank == 0:
        os.makedirs("ckpt", exist_ok=True)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step, "args": a}, f"ckpt/last.pt")
        log.info("saved ckpt/last.pt")
    dist.barrier()
    dist.destroy_process_group()
    log.info(f"[rank{rank}] done")

if __name__ == "__main__":
    main()
