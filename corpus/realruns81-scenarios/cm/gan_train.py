"""DCGAN-style / WGAN training loop on synthetic 2-D ring data (MLP G and D), two optimizers.

--fault: none | no_detach | step_order | wgan_clip | killed | shm
Runs single-process, under torchrun, or under torch.multiprocessing.spawn (--spawn N).
"""
import argparse
import math
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--bs", type=int, default=128)
p.add_argument("--wgan", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", default="36671")
p.add_argument("--slow", type=float, default=0.0)
args = p.parse_args()


def ring_batch(bs, gen):
    theta = torch.rand(bs, generator=gen) * 2 * math.pi
    k = torch.randint(0, 8, (bs,), generator=gen).float()
    theta = k * (2 * math.pi / 8)
    pts = torch.stack([torch.cos(theta), torch.sin(theta)], 1) * 2.0
    return pts + 0.05 * torch.randn(bs, 2, generator=gen)


def make_nets():
    G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 2))
    D = nn.Sequential(nn.Linear(2, 128), nn.LeakyReLU(0.2), nn.Linear(128, 128), nn.LeakyReLU(0.2),
                      nn.Linear(128, 1))
    return G, D


def train(rank, world):
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    G, D = make_nets()
    if distributed:
        G = nn.parallel.DistributedDataParallel(G)
        D = nn.parallel.DistributedDataParallel(D)
    if args.wgan or args.fault == "wgan_clip":
        optG = torch.optim.RMSprop(G.parameters(), lr=5e-5)
        optD = torch.optim.RMSprop(D.parameters(), lr=5e-5)
    else:
        optG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
        optD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    schedG = torch.optim.lr_scheduler.ExponentialLR(optG, gamma=0.99)
    schedD = torch.optim.lr_scheduler.ExponentialLR(optD, gamma=0.99)
    bce = nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(10 + rank)
    t0 = time.time()
    print(f"[rank {rank}/{world}] pid={os.getpid()} G={sum(p.numel() for p in G.parameters())} "
          f"D={sum(p.numel() for p in D.parameters())} params", flush=True)
    for step in range(args.steps):
        if step % 10 == 0:
            # decay at the start of every 10-step "epoch"
            schedG.step()
            schedD.step()
        real = ring_batch(args.bs, gen)
        z = torch.randn(args.bs, 16, generator=gen)
        fake = G(z)
        ones = torch.ones(args.bs, 1)
        zeros = torch.zeros(args.bs, 1)

        if args.fault == "wgan_clip":
            # ---- critic ----
            lossD = -(D(real).mean() - D(fake.detach()).mean())
            optD.zero_grad()
            lossD.backward()
            optD.step()
            for prm in D.parameters():
                prm.clamp_(-0.01, 0.01)        # weight clipping
            lossG = -D(fake).mean()
            optG.zero_grad()
            lossG.backward()
            optG.step()
        elif args.fault == "step_order":
            # compute both losses first, then update -- D is stepped before G's backward
            d_fake = D(fake)
            lossD = bce(D(real), ones) + bce(D(fake.detach()), zeros)
            lossG = bce(d_fake, ones)
            optD.zero_grad()
            lossD.backward()
            optD.step()
            optG.zero_grad()
            lossG.backward()
            optG.step()
        else:
            # ---- discriminator ----
            fake_in = fake if args.fault == "no_detach" else fake.detach()
            lossD = bce(D(real), ones) + bce(D(fake_in), zeros)
            optD.zero_grad()
            lossD.backward()
            optD.step()
            # ---- generator ----
            if args.fault == "no_detach":
                lossG = bce(D(fake), ones)
            else:
                lossG = bce(D(fake), ones)
            optG.zero_grad()
            lossG.backward()
            optG.step()
        if args.slow and rank == args.fault_rank:
            time.sleep(args.slow)
        if step % 5 == 0:
            with torch.no_grad():
                spread = fake.std(0).mean().item()
            print(f"[rank {rank}] step {step:3d} lossD {lossD.item():.4f} lossG {lossG.item():.4f} "
                  f"fake_std {spread:.3f} ({time.time()-t0:.1f}s)", flush=True)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank {rank}] finished {args.steps} steps", flush=True)


def _spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = args.port
    train(rank, world)


def main():
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "WORLD_SIZE" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        train(0, 1)


if args.fault == "no_main_guard":
    # notebook cell pasted into a script: launch at module level
    main()
elif __name__ == "__main__":
    main()
