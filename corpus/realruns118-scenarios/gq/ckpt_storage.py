"""2-rank DDP job launched with torch.multiprocessing.spawn; rank 0 writes checkpoints.

The storage problems are environmental (where --out points, ulimits, mounts, capabilities);
the flags only choose how the checkpoint is written, as real training code does.
"""
import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_logging(rank):
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
        stream=sys.stdout,
        force=True,
    )
    return logging.getLogger("trainer")


class ConvNet(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc(self.features(x))


def run_name(a):
    if a.name_style == "short":
        return a.exp
    # descriptive name built from the sweep's hyper-parameters
    hp = {"exp": a.exp, "width": a.width, "lr": a.lr, "bs": a.bs, "sched": "cosine_warmup_linear_decay",
          "aug": "randaugment_n2_m9_mixup0.2_cutmix1.0_label_smoothing0.1", "ema": "0.9999",
          "data": "imagenet_subset_" + "_".join(f"shard{i:03d}" for i in range(a.shards))}
    return "__".join(f"{k}={v}" for k, v in hp.items())


def save_checkpoint(state, a, step, log):
    d = os.path.join(a.out, run_name(a))
    os.makedirs(d, exist_ok=True)
    final = os.path.join(d, f"ckpt_step{step:05d}.pt")
    t0 = time.time()
    if a.write == "direct":
        torch.save(state, final)
    elif a.write == "fileobj":
        with open(final, "wb") as f:
            torch.save(state, f)
    elif a.write == "tmp-rename":
        # write to node-local scratch first, then move into place
        fd, tmp = tempfile.mkstemp(suffix=".pt", dir=a.scratch)
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
        os.rename(tmp, final)
    log.info("checkpoint written: %s (%.1f MB in %.2fs)", final, os.path.getsize(final) / 1e6, time.time() - t0)


def worker(rank, world, a):
    log = setup_logging(rank)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(a.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.timeout_s))
    log.info("process group ready (world=%d)", world)
    torch.manual_seed(0)
    model = ConvNet(a.width)
    if a.bank_mb:
        model.register_buffer("ema_bank", torch.zeros(a.bank_mb * 256 * 1024))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, a.steps + 1):
        x = torch.randn(a.bs, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (a.bs,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            log.info("step %d/%d loss=%.4f", step, a.steps, loss.item())
        if step % a.save_every == 0:
            if rank == 0:
                state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}
                save_checkpoint(state, a, step, log)
            dist.barrier()
    log.info("done")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="outputs")
    p.add_argument("--scratch", default="/tmp")
    p.add_argument("--write", default="direct", choices=["direct", "fileobj", "tmp-rename"])
    p.add_argument("--name-style", default="short", choices=["short", "descriptive"])
    p.add_argument("--exp", default="cnn-baseline")
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--bank-mb", type=int, default=0)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--port", type=int, default=45160)
    p.add_argument("--timeout-s", type=int, default=30)
    p.add_argument("--world", type=int, default=2)
    a = p.parse_args()
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
