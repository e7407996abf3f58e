"""DDP + ZeroRedundancyOptimizer classifier with periodic optimizer checkpointing. --spawn N uses torch.multiprocessing.spawn."""
import argparse, logging, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.optim import ZeroRedundancyOptimizer

p = argparse.ArgumentParser()
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=46770)
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--ckpt-dir", default="work/zero_ckpt")
p.add_argument("--resume", default="")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--overlap", action="store_true")
p.add_argument("--find-unused", action="store_true")

def run(rank, world, a):
    logging.basicConfig(level=logging.INFO, format=f"[%(asctime)s] [{rank}] %(levelname)s - %(message)s", force=True)
    log = logging.getLogger("zero")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    width = 128 if (a.fault == "wider-rank" and rank == 1) else 64
    net = nn.Sequential(nn.Linear(20, width), nn.ReLU(), nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 5))
    model = DDP(net, find_unused_parameters=a.find_unused)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3, overlap_with_ddp=False)
    if a.resume:
        sd = torch.load(a.resume, map_location="cpu", weights_only=True)
        opt.load_state_dict(sd["optim"]); model.module.load_state_dict(sd["model"])
        log.info("resumed optimizer+model from %s", a.resume)
    g = torch.Generator().manual_seed(100 + rank)
    X = torch.randn(512, 20, generator=g); Y = (X[:, :5].argmax(1))
    for step in range(a.steps):
        i = (step * 32) % 512
        loss = F.cross_entropy(model(X[i:i + 32]), Y[i:i + 32])
        loss.backward(); opt.step(); opt.zero_grad()
        if rank == 0: log.info("step %d loss %.4f", step, loss.item())
        if (step + 1) % a.save_every == 0:
            if a.fault == "no-consolidate":
                pass  # forgot: opt.consolidate_state_dict(to=0) on every rank
            elif a.fault == "consolidate-rank0-only":
                if rank == 0: opt.consolidate_state_dict(to=0)
            else:
                opt.consolidate_state_dict(to=0)
            if rank == 0:
                os.makedirs(a.ckpt_dir, exist_ok=True)
                path = os.path.join(a.ckpt_dir, f"step{step + 1}.pt")
                torch.save({"model": model.module.state_dict(), "optim": opt.state_dict()}, path)
                log.info("saved %s", path)
    log.info("done")
    dist.destroy_process_group()

if __name__ == "__main__":
    a = p.parse_args()
    if a.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
        import torch.multiprocessing as mp
        mp.spawn(run, args=(a.spawn, a), nprocs=a.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a)
