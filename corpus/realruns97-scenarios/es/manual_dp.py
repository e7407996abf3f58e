"""Hand-rolled data parallel trainer (explicit all_reduce of gradients, gloo/CPU).

--fault selects a real bug on --fault-rank at --fault-step:
  order        rank broadcasts the early-stop flag before the grad all_reduce, others after it
  early-stop   rank decides locally to stop (patience on its own loss) and leaves the loop
  gather-list  all_gather output list sized from the config's num_workers instead of world size
  band-flag    'all ranks finished' check done with ReduceOp.BAND on a float flag
  stuck-io     rank blocks in a slow NFS-like read before the epoch-end monitored_barrier
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--num-workers-cfg", type=int, default=2)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--slurm-env", action="store_true", help="map SLURM_PROCID/SLURM_NTASKS to RANK/WORLD_SIZE")
args = p.parse_args()


def main():
    if "SLURM_PROCID" in os.environ and "--slurm-env" in sys.argv:
        os.environ.setdefault("RANK", os.environ["SLURM_PROCID"])
        os.environ.setdefault("WORLD_SIZE", os.environ["SLURM_NTASKS"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    for prm in model.parameters():
        dist.broadcast(prm.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(256, 16, generator=g)
    y = x.sum(1, keepdim=True).sin()
    print(f"rank {rank}/{world}: params synced, {x.shape[0]} local samples", flush=True)
    best, bad = 1e9, 0
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"[r{rank}] train", mininterval=0, ncols=90)
    for step in it:
        idx = torch.randint(0, 256, (32,), generator=g)
        loss = F.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        stop = torch.zeros(1)
        if args.fault == "order" and rank == args.fault_rank and step == args.fault_step:
            dist.broadcast(stop, src=0)  # moved above the grad sync in this rank's code path (resume branch)
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
            prm.grad /= world
        if not (args.fault == "order" and rank == args.fault_rank and step == args.fault_step):
            dist.broadcast(stop, src=0)
        opt.step()
        lv = loss.detach()
        if args.fault == "gather-list" and step == args.fault_step:
            losses = [torch.zeros(1) for _ in range(args.num_workers_cfg)]
            dist.all_gather(losses, lv.reshape(1))
            print(f"rank {rank}: per-rank losses {[round(t.item(), 4) for t in losses]}", flush=True)
        if args.fault == "band-flag" and step == args.fault_step:
            done = torch.tensor([1.0 if step >= args.fault_step else 0.0])
            dist.all_reduce(done, op=dist.ReduceOp.BAND)
        if args.fault == "early-stop" and rank == args.fault_rank:
            if lv.item() < best - 1e-3:
                best, bad = lv.item(), 0
            else:
                bad += 1
            if step >= args.fault_step and bad >= 1:
                print(f"rank {rank}: early stopping at step {step} (best {best:.4f})", flush=True)
                break
        if args.fault == "stuck-io" and rank == args.fault_rank and step == args.fault_step:
            # reads the next epoch's shard from a path that blocks (hung mount emulated by a FIFO with no writer)
            fifo = "/work/rr97/es/work/stuck_mount/shard_next.bin"
            os.makedirs(os.path.dirname(fifo), exist_ok=True)
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            with open(fifo, "rb") as fh:
                fh.read()
        if args.fault == "stuck-io" and step == args.fault_step:
            dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
        if not args.tqdm and rank == 0:
            print(f"step {step:3d} | loss {lv.item():.5f}", flush=True)
    dist.barrier()
    print(f"rank {rank}: finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
