#!/usr/bin/env python
"""Tiny classifier with checkpoint save / resume; runs single-process or under torchrun (gloo)."""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, in_dim=20, hidden=48, n_cls=5, extra_layer=False):
        super().__init__()
        layers = [nn.Linear(in_dim, hidden), nn.ReLU()]
        if extra_layer:
            layers += [nn.Linear(hidden, hidden), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, n_cls)

    def forward(self, x):
        return self.head(self.body(x))


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--hidden", type=int, default=48)
    p.add_argument("--extra-layer", action="store_true")
    p.add_argument("--resume", default=None)
    p.add_argument("--out-dir", default=None)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--save-args", action="store_true", help="store argparse namespace in checkpoint")
    p.add_argument("--unwrap-on-save", action="store_true")
    p.add_argument("--no-decay-groups", action="store_true", help="separate param group for biases")
    p.add_argument("--loader-workers", type=int, default=-1, help="use a DataLoader with N workers")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--step-sleep", type=float, default=0.05)
    return p.parse_args()


def main():
    args = parse()
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s | %(levelname)-7s | rank{rank} | %(message)s", datefmt="%H:%M:%S")
    log = logging.getLogger("ckpt_train")
    log.info("world_size=%d resume=%s out_dir=%s", world, args.resume, args.out_dir)

    torch.manual_seed(0)
    model = Classifier(hidden=args.hidden, extra_layer=args.extra_layer)
    wrapped = nn.parallel.DistributedDataParallel(model) if distributed else model
    if args.no_decay_groups:
        decay = [p for n, p in wrapped.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in wrapped.named_parameters() if n.endswith("bias")]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    else:
        opt = torch.optim.AdamW(wrapped.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        log.info("resuming from %s", args.resume)
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt.get("step", 0)
        log.info("resumed at step %d", start)

    g = torch.Generator().manual_seed(7 + rank)
    loader_it = None
    if args.loader_workers >= 0:
        X = torch.randn(32 * args.steps, 20, generator=g)
        ds = torch.utils.data.TensorDataset(X)
        loader_it = iter(torch.utils.data.DataLoader(ds, batch_size=32, num_workers=args.loader_workers))
    for step in range(start, start + args.steps):
        x = next(loader_it)[0] if loader_it is not None else torch.randn(32, 20, generator=g)
        y = (x[:, :5].argmax(1))
        loss = F.cross_entropy(wrapped(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log.info("step %d loss %.4f", step, loss.item())
        if args.out_dir and (step + 1) % args.save_every == 0:
            if rank == 0:
                os.makedirs(args.out_dir, exist_ok=True)
                path = os.path.join(args.out_dir, f"step_{step+1:05d}.pt")
                sd = model.state_dict() if args.unwrap_on_save else wrapped.state_dict()
                obj = {"model": sd, "optimizer": opt.state_dict(), "step": step + 1}
                if args.save_args:
                    obj["args"] = args
                torch.save(obj, path)
                log.info("checkpoint saved: %s (%.1f kB)", path, os.path.getsize(path) / 1024)
            if distributed:
                dist.barrier()
        time.sleep(args.step_sleep)
    log.info("done")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
