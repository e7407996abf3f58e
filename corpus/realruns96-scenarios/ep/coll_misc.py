"""Object collectives, subgroups, p2p, SyncBatchNorm scenarios. torchrun or --spawn N."""
import argparse, os, sys, time, io, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=2)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--timeout", type=int, default=25)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", default="41140")
a = p.parse_args()

class RunConfig:
    def __init__(self, path):
        self.lr = 0.05; self.name = "exp-17"
        self.metrics_file = open(path, "a")   # kept open so every rank can append metrics
        self.tokenize = lambda s: s.split()

def worker(rank, world):
    if a.spawn:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=a.port)
        if a.fault != "forgot_init":
            dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
    if a.fault != "forgot_init":
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    cfg = None
    if a.fault == "bcast_obj":
        objs = [RunConfig(f"/work/rr96/ep/tmp/metrics_{os.getpid()}.txt") if rank == 0 else None]
        dist.broadcast_object_list(objs, src=0)
        cfg = objs[0]
    model = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.BatchNorm1d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16, 3))
    if a.fault in ("syncbn", "syncbn_eval"):
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    sub = None
    if a.fault == "subgroup" and rank != 2:
        # eval group of the first two ranks (rank 2 is the "data" rank)
        sub = dist.new_group([0, 1])
    print(f"[rank{rank}] ready world={world}", flush=True)
    for step in range(a.steps):
        x = torch.randn(8, 4, 16, generator=g); y = torch.randint(0, 3, (8,), generator=g)
        if a.fault == "syncbn_eval" and step == a.step:
            ddp.eval()
            if rank == a.rank:
                x = x[:1]   # last partial batch
        loss = nn.functional.cross_entropy(ddp(x), y[: x.shape[0]])
        loss.backward(); opt.step(); opt.zero_grad()
        ddp.train()
        if a.fault == "gather_obj" and step == a.step:
            stats = {"rank": rank, "loss": loss.item(), "samples": 8 * (step + 1)}
            if rank == a.rank:
                stats["hist"] = (v for v in range(3))   # lazily computed histogram
            out = [None] * world
            dist.all_gather_object(out, stats)
            if rank == 0: print("gathered", out, flush=True)
        if a.fault == "p2p" and step == a.step:
            # pipeline-style hand-off of activations rank0 -> rank1
            if rank == 0:
                act = torch.randn(8, 8 * 16)
                dist.send(act, dst=1)
            elif rank == 1:
                buf = torch.empty(8, 8 * 8)    # receiver built with stale flatten size
                dist.recv(buf, src=0)
        if a.fault == "subgroup" and step == a.step and rank != 2:
            t = torch.tensor([loss.item()])
            dist.all_reduce(t, group=sub)
        l = loss.detach().clone(); dist.all_reduce(l)
        if rank == 0: print(f"step {step} loss {(l / world).item():.4f}", flush=True)
    dist.barrier()
    print(f"[rank{rank}] done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(a.spawn,), nprocs=a.spawn, join=True)
    else:
        worker(None, None)
