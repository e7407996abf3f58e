"""DDP regression trainer reading pre-sharded data, with early stopping.

--fault:
  none            healthy; DistributedSampler without set_epoch (same order every epoch)
  early_stop_local the patience counter is only kept on rank 0 (the rank that logs); when it fires,
                   rank 0 breaks out of the loop while the others continue
  uneven_shards   shard files split round-robin over ranks (shard_i for i in range(rank, n, world)),
                   shards have different sizes; epoch ends with dist.monitored_barrier
"""
import argparse, os, sys, time
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler, ConcatDataset
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--patience", type=int, default=1)
p.add_argument("--shard-sizes", default="64,256,64")
p.add_argument("--data-dir", default="/tmp/bc_shards")
p.add_argument("--barrier-timeout", type=int, default=15)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
D = 16
w_true = torch.randn(D, 1)

if args.fault == "uneven_shards":
    sizes = [int(s) for s in args.shard_sizes.split(",")]
    if rank == 0:
        os.makedirs(args.data_dir, exist_ok=True)
        for i, n in enumerate(sizes):
            x = torch.randn(n, D)
            torch.save({"x": x, "y": x @ w_true + 0.1 * torch.randn(n, 1)}, f"{args.data_dir}/shard_{i}.pt")
    dist.barrier()
    mine = list(range(rank, len(sizes), world))
    parts = []
    for i in mine:
        d = torch.load(f"{args.data_dir}/shard_{i}.pt")
        parts.append(TensorDataset(d["x"], d["y"]))
    train_ds = ConcatDataset(parts)
    print(f"[rank{rank}] shards {mine} -> {len(train_ds)} samples", flush=True)
    train_dl = DataLoader(train_ds, batch_size=16, shuffle=True, drop_last=True)
    sampler = None
else:
    x = torch.randn(1024, D)
    train_ds = TensorDataset(x, x @ w_true + 0.1 * torch.randn(1024, 1))
    sampler = DistributedSampler(train_ds)
    train_dl = DataLoader(train_ds, batch_size=16, sampler=sampler)

xv = torch.randn(64, D)
yv = xv @ w_true + 0.5 * torch.randn(64, 1) * (1 + 4 * rank)  # each rank's local val shard has its own noise
val_local = (xv[rank::world], yv[rank::world])

model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(D, 32), nn.Tanh(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
best, bad = float("inf"), 0
for epoch in range(args.epochs):
    model.train()
    it = tqdm(train_dl, desc=f"epoch {epoch}", disable=not args.tqdm or rank != 0, mininterval=0)
    for x, y in it:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if args.tqdm:
            it.set_postfix(loss=f"{loss.item():.4f}")
    print(f"[rank{rank}] epoch {epoch} done, {len(train_dl)} steps, last loss {loss.item():.4f}", flush=True)
    if args.fault == "uneven_shards":
        dist.monitored_barrier(timeout=timedelta(seconds=args.barrier_timeout))
    model.eval()
    with torch.no_grad():
        vl = nn.functional.mse_loss(model.module(val_local[0]), val_local[1]).item()
    print(f"[rank{rank}] epoch {epoch} val_loss {vl:.4f} (best {best:.4f})", flush=True)
    if args.fault == "early_stop_local" and rank == 0:  # EarlyStopping object only lives on the logging rank
        if vl < best - 1e-3:
            best, bad = vl, 0
        else:
            bad += 1
            if bad >= args.patience:
                print(f"[rank{rank}] early stopping: no improvement for {bad} epochs", flush=True)
                break
    else:
        best = min(best, vl)

if rank == 0:
    torch.save(model.module.state_dict(), "/tmp/bc_final.pt")
    print("[rank0] saved /tmp/bc_final.pt", flush=True)
dist.barrier()
dist.destroy_process_group()
print(f"[rank{rank}] finished", flush=True)
