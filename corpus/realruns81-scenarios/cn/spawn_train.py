#!/usr/bin/env python
"""DDP training launched with torch.multiprocessing.spawn (no torchrun)."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoHead(nn.Module):
    def __init__(self, hidden=32, use_aux=True, aux_classes=3):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(12, hidden), nn.Tanh())
        self.reg = nn.Linear(hidden, 1)
        self.aux = nn.Linear(hidden, aux_classes)
        self.use_aux = use_aux

    def forward(self, x):
        h = self.enc(x)
        out = {"reg": self.reg(h)}
        if self.use_aux:
            out["aux"] = self.aux(h)
        return out


def worker(rank, world, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    aux_w = args.aux_weight
    # labels of this rank's shard; head size is derived from the labels seen locally (bug: per-rank)
    g0 = torch.Generator().manual_seed(1000 + rank)
    n_lab = 4 if (args.fault == "shard-classes" and rank == args.fault_rank) else 3
    shard_labels = torch.randint(0, n_lab, (256,), generator=g0)
    aux_classes = int(shard_labels.max()) + 1 if args.fault == "shard-classes" else 3
    print(f"[rank{rank}] aux head: {aux_classes} classes", flush=True)
    model = TwoHead(use_aux=aux_w > 0, aux_classes=aux_classes)
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = torch.randn(16, 12, generator=g)
        y = x[:, :3].sum(1, keepdim=True)
        out = ddp(x)
        loss = F.mse_loss(out["reg"], y)
        if "aux" in out:
            loss = loss + aux_w * F.cross_entropy(out["aux"], (x[:, 0] > 0).long())
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"epoch 0 step {step} loss={loss.item():.4f}", flush=True)
        if args.out and (step + 1) % args.save_every == 0 and rank == 0:
            torch.save(ddp.module.state_dict(), os.path.join(args.out, f"model_{step+1}.pt"))
            print(f"saved {args.out}/model_{step+1}.pt", flush=True)
        time.sleep(0.05)
    if rank == 0:
        print("finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=36713)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--aux-weight", type=float, default=0.1)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--out", default=None)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--pg-timeout", type=int, default=20)
    args = p.parse_args()
    print(f"spawning {args.nprocs} workers (gloo, port {args.port})", flush=True)
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
