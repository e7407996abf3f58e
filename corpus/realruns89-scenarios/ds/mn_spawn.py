"""Per-node launcher using torch.multiprocessing.spawn (no torchrun): run once per node with
--node-rank; MASTER_ADDR/MASTER_PORT come from the environment.  Healthy run with noisy warnings."""
import argparse, os, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(local_rank, a):
    rank = a.node_rank * a.nproc + local_rank
    world = a.nnodes * a.nproc
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    x = torch.randn(512, 16); y = (x.sum(1) > 0).long()
    ds = TensorDataset(x, y)
    dl = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds), num_workers=a.workers)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs)
    sched.step()  # warm-start
    class_w = torch.tensor(torch.ones(2))
    for ep in range(a.epochs):
        dl.sampler.set_epoch(ep)
        tot = torch.zeros(2)
        for xb, yb in dl:
            loss = F.cross_entropy(model(xb), yb, weight=class_w)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += torch.tensor([loss.item(), 1.0])
        sched.step()
        dist.all_reduce(tot)
        if rank == 0:
            print(f"epoch {ep} mean_loss {tot[0]/tot[1]:.4f}", flush=True)
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--node-rank", type=int, required=True); p.add_argument("--nnodes", type=int, default=2)
    p.add_argument("--nproc", type=int, default=1); p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    a = p.parse_args()
    print(f"node {a.node_rank}: spawning {a.nproc} workers, master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    mp.spawn(worker, args=(a,), nprocs=a.nproc, join=True)
