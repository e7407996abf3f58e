#!/usr/bin/env python
"""Train a small DDP language-ish model, checkpoint, and resume.

Phase 'train' writes checkpoints the way the script's authors did; phase 'resume'
loads them back. Bugs are in how the two phases disagree.
"""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("resume")


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--phase", choices=["train", "resume"], required=True)
    p.add_argument("--ckpt-dir", default="/work/rr56/g/ckpt")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--save-style", choices=["ddp", "module", "with_args"], default="module")
    p.add_argument("--no-decay-groups", action="store_true",
                   help="put norm/bias params in a separate weight-decay-free param group")
    p.add_argument("--shard-optim", action="store_true", help="each rank saves its own optimizer state")
    p.add_argument("--lr", type=float, default=3e-4)
    return p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.ln_f = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        h = h + self.block(h)
        return self.out(self.ln_f(h))


def param_groups(model, args):
    if not args.no_decay_groups:
        return [{"params": list(model.parameters()), "weight_decay": 0.1}]
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    args = get_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.dim)
    ddp = DDP(model)
    opt = torch.optim.AdamW(param_groups(model, args), lr=args.lr)
    start = 0
    os.makedirs(args.ckpt_dir, exist_ok=True)
    last = os.path.join(args.ckpt_dir, "last.pt")

    if args.phase == "resume":
        log.info("rank %d: resuming from %s", rank, last)
        ckpt = torch.load(last, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        if args.shard_optim:
            opt.load_state_dict(torch.load(os.path.join(args.ckpt_dir, f"optim_rank{rank}.pt"), map_location="cpu"))
        else:
            opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
        log.info("rank %d: resumed at step %d", rank, start)

    g = torch.Generator().manual_seed(100 + rank)
    t0 = time.time()
    for step in range(start + 1, start + args.steps + 1):
        ids = torch.randint(0, args.vocab, (8, 33), generator=g)
        logits = ddp(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 5 == 0:
            log.info("step %d loss %.4f tok/s %.0f", step, loss.item(), step * 8 * 32 * world / (time.time() - t0))
        if args.phase == "train" and step % args.save_every == 0:
            if args.shard_optim:
                torch.save(opt.state_dict(), os.path.join(args.ckpt_dir, f"optim_rank{rank}.pt"))
            if rank == 0:
                sd = ddp.state_dict() if args.save_style == "ddp" else model.state_dict()
                ckpt = {"model": sd, "step": step}
                if not args.shard_optim:
                    ckpt["optimizer"] = opt.state_dict()
                if args.save_style == "with_args":
                    ckpt["args"] = args
                torch.save(ckpt, last)
                log.info("saved checkpoint to %s (step %d)", last, step)
            dist.barrier()
    dist.barrier()
    if rank == 0:
        log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
