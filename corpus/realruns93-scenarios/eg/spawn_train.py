#!/usr/bin/env python
"""DDP training started with torch.multiprocessing.spawn (no torchrun).
--fault none | pickle_lambda   (DataLoader with spawn context and a lambda collate_fn)"""
import argparse, datetime, os, sys, time, warnings
import torch, torch.distributed as dist, torch.multiprocessing as mp, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def worker(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(rank)
    X = torch.randn(args.steps * 8 * world, 16); Y = (X[:, 0] > 0).long()
    ds = TensorDataset(X, Y)
    dl = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank, shuffle=False))
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 500)
    sched.step()  # sync scheduler with resumed epoch counter
    epoch = 0
    step = 0
    while step < args.steps:
        if epoch == 1 and rank == 0:
            print(f"[rank{rank}] epoch {epoch}: rebuilding dataloader for eval pass", flush=True)
        for x, y in dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 2 == 0:
                print(f"[rank{rank}] epoch={epoch} step={step} loss={loss.item():.4f} lr={sched.get_last_lr()[0]:.2e}", flush=True)
            step += 1
            if step == args.eval_step and rank == 0:
                kw = {}
                if args.fault == "pickle_lambda":
                    # parallel eval loader; 'spawn' context to stay safe with the gloo threads
                    kw = dict(num_workers=1, multiprocessing_context="spawn",
                              collate_fn=lambda b: (torch.stack([s[0] for s in b]), torch.stack([s[1] for s in b])))
                ev = DataLoader(TensorDataset(X[:256], Y[:256]), batch_size=64, **kw)
                with torch.no_grad():
                    acc = sum((model.module(x).argmax(1) == y).sum().item() for x, y in ev) / 256
                print(f"[rank{rank}] eval at step {step}: acc={acc:.3f}", flush=True)
            if step >= args.steps: break
        epoch += 1
        sched.step()
    print(f"[rank{rank}] done after {step} steps", flush=True)
    dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--port", type=int, default=40240); p.add_argument("--eval-step", type=int, default=1000); p.add_argument("--nprocs", type=int, default=2)
    args = p.parse_args()
    print(f"launching {args.nprocs} processes with torch.multiprocessing.spawn", flush=True)
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
