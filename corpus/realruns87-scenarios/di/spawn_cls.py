"""MLP classifier on per-rank feature files, launched with torch.multiprocessing.spawn.

DATA/feat_rank{r}.npz (x float32 [n, 32], y int64 [n]); checkpoints CKPT/model.pt + CKPT/optim_rank{r}.pt
"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def build(num_classes, hidden):
    return nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, num_classes))


def worker(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    d = np.load(os.path.join(args.data_dir, f"feat_rank{rank}.npz"))
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    num_classes = args.num_classes
    if args.classes_from_labels:
        num_classes = int(y.max()) + 1  # infer label set from this rank's file
    model = build(num_classes, args.hidden)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    start = 0
    if args.resume:
        sd = torch.load(os.path.join(args.resume, "model.pt"))
        model.load_state_dict(sd["model"])
        start = sd["epoch"]
        opt.load_state_dict(torch.load(os.path.join(args.resume, f"optim_rank{rank}.pt")))
        print(f"[rank {rank}] resumed at epoch {start}", flush=True)
    n = x.shape[0]
    for epoch in range(start, args.epochs):
        if args.sched_first:
            sched.step()
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch))
        tot, cnt = 0.0, 0
        for i in range(0, n - args.batch + 1, args.batch):
            idx = perm[i:i + args.batch]
            out = ddp(x[idx])
            loss = F.cross_entropy(out, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item(); cnt += 1
        if not args.sched_first:
            sched.step()
        stats = torch.tensor([tot, cnt], dtype=torch.float64)
        dist.all_reduce(stats)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs} train_loss {stats[0] / stats[1]:.4f} lr {sched.get_last_lr()[0]:.4f}", flush=True)
        if args.ckpt and (epoch + 1) % 5 == 0:
            os.makedirs(args.ckpt, exist_ok=True)
            if rank == 0:
                torch.save({"model": model.state_dict(), "epoch": epoch + 1}, os.path.join(args.ckpt, "model.pt"))
            torch.save(opt.state_dict(), os.path.join(args.ckpt, f"optim_rank{rank}.pt"))
            dist.barrier()
        time.sleep(args.sleep)
    if rank == 0:
        print("finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--port", type=int, default=37960)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--num-classes", type=int, default=10)
    ap.add_argument("--classes-from-labels", action="store_true")
    ap.add_argument("--sched-first", action="store_true")
    ap.add_argument("--resume", default="")
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--sleep", type=float, default=0.0)
    a = ap.parse_args()
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)
