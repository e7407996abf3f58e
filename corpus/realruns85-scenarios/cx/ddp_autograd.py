"""Small DDP regression trainer used to reproduce autograd / DDP-reducer bugs.

Usage: torchrun --nproc-per-node N ddp_autograd.py --fault NAME --rank R --step S [options]
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank on which the fault is triggered")
p.add_argument("--step", type=int, default=3, help="step at which the fault is triggered")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--static-graph", action="store_true")
p.add_argument("--ckpt", default="off", choices=["off", "reentrant", "nonreentrant", "reentrant_stem"])
p.add_argument("--accum", type=int, default=1)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=37401)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        h = F.gelu(self.fc1(self.norm(x)))
        return x + self.fc2(h)


class Net(nn.Module):
    def __init__(self, d=32, nblocks=3, nclass=5, aux_head=True):
        super().__init__()
        self.embed = nn.Linear(16, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(nblocks)])
        self.head = nn.Linear(d, nclass)
        self.aux_head = nn.Linear(d, nclass) if aux_head else None
        self.register_buffer("seen", torch.zeros(1))
        self.ckpt = "off"
        self.use_aux = True
        self.skip_block = None

    def forward(self, x):
        if self.ckpt == "reentrant_stem":
            # checkpoint the stem (embed + first block) to save activation memory
            h = checkpoint(lambda t: self.blocks[0](self.embed(t)), x, use_reentrant=True)
        else:
            h = self.embed(x)
        for i, b in enumerate(self.blocks):
            if self.ckpt == "reentrant_stem" and i == 0:
                continue
            if self.skip_block == i:
                continue
            if self.ckpt == "reentrant":
                h = checkpoint(b, h, use_reentrant=True)
            elif self.ckpt == "nonreentrant":
                h = checkpoint(b, h, use_reentrant=False)
            else:
                h = b(h)
        out = self.head(h)
        if self.aux_head is not None and self.use_aux:
            out = out + 0.1 * self.aux_head(h)
        if self.training:
            self.seen += 1
        return out


def setup_logging(rank):
    if args.logfmt == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
            stream=sys.stdout,
        )
        lg = logging.getLogger("trainer")
        return lg.info
    return lambda m: print(f"[rank{rank}] {m}", flush=True)


def run(rank, world):
    log = setup_logging(rank)
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.pg_timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank = dist.get_rank()
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = Net()
    model.ckpt = args.ckpt

    if args.fault == "frozen_before_wrap":
        # freeze the backbone for linear probing ... but the loop below freezes everything
        for n, prm in model.named_parameters():
            if not n.startswith("head") or True:
                prm.requires_grad_(False)
    if args.fault == "rank_model_mismatch" and rank == args.rank:
        # per-rank config read from env: rank R got an extra block
        model.blocks.append(Block(32))
    if args.fault == "buffer_shape" and rank == args.rank:
        model.seen = torch.zeros(2)

    log(f"world={world} params={sum(q.numel() for q in model.parameters())} fault={args.fault} ckpt={args.ckpt}")
    ddp = DDP(model, find_unused_parameters=args.find_unused, static_graph=args.static_graph)
    if args.fault == "module_changed_after_wrap":
        # swap the classification head for a fresh one after wrapping (new task)
        model.head = nn.Linear(32, 5)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    g = torch.Generator().manual_seed(1234 + rank)
    X = torch.randn(64, 16, generator=g)
    Y = torch.randint(0, 5, (64,), generator=g)
    bs = 8
    steps = range(args.steps)
    bar = None
    if args.logfmt == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr, dynamic_ncols=False, ncols=90)

    for step in steps:
        idx = torch.arange(step * bs, (step + 1) * bs) % 64
        x, y = X[idx], Y[idx]
        fire = (step == args.step) and (rank == args.rank or args.rank < 0)
        t0 = time.time()

        if args.fault == "unused_branch" and fire:
            # rank R takes a branch where the aux head is not used (e.g. batch without aux labels)
            model.use_aux = False
        if args.fault == "skip_block" and rank == args.rank and step >= args.step:
            # layer-drop: rank R skips block 1
            model.skip_block = 1
        if args.fault == "static_graph_change" and step >= args.step:
            model.use_aux = False
        if args.fault == "requires_grad_off" and fire:
            for prm in ddp.parameters():
                prm.requires_grad_(False)  # "freeze for eval" leaking into training

        if args.fault == "no_sync_one_rank":
            # gradient accumulation, but the micro-step counter is computed per rank
            local_step = step + (1 if rank == args.rank else 0)
            if local_step % 2 == 0:
                with ddp.no_sync():
                    out = ddp(x)
                    loss = F.cross_entropy(out, y)
                    loss.backward()
                log(f"step {step} accum loss={loss.item():.4f}")
                continue
        if args.fault == "no_sync_fwd_outside" and fire:
            out = ddp(x)
            with ddp.no_sync():
                loss = F.cross_entropy(out, y)
                loss.backward()
            out = ddp(x)

        if args.fault == "two_views":
            # SimCLR-style: two augmented views through the wrapped model, one backward
            out2 = ddp(x + 0.05 * torch.randn_like(x))
        out = ddp(x)
        if args.fault == "two_views":
            loss = F.cross_entropy(out, y) + F.mse_loss(out, out2)
        elif args.fault == "inplace" and fire:
            # clamp logits in place "for stability"
            probs = torch.sigmoid(out)
            probs.clamp_(1e-4, 1 - 1e-4)
            loss = F.binary_cross_entropy(probs, F.one_hot(y, 5).float())
        elif args.fault == "inplace_relu" and fire:
            h = ddp.module.embed(x)
            a = torch.tanh(h)
            a += 1.0
            loss = F.cross_entropy(out, y) + a.mean() * 0.0
        elif args.fault == "no_grad_fn" and fire:
            # loss recomputed from .item() values for logging, then backpropagated
            loss = torch.tensor(F.cross_entropy(out, y).item())
        elif args.fault == "nonscalar" and fire:
            loss = F.cross_entropy(out, y, reduction="none")
        else:
            loss = F.cross_entropy(out, y)

        if args.fault == "backward_twice" and fire:
            loss.backward()
            reg = 0.01 * out.pow(2).mean()
            (loss + reg).backward()
        elif args.fault == "retain_twice" and fire:
            loss.backward(retain_graph=True)
            loss.backward()
        else:
            loss.backward()

        if args.fault == "leaf_inplace" and fire:
            for prm in ddp.parameters():
                prm.mul_(0.999)  # decoupled weight decay by hand
        if (step + 1) % args.accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
        dt = time.time() - t0
        if args.fault == "wrapper_attr" and fire:
            # periodic weight-norm monitoring on the logging rank
            log(f"head weight norm={ddp.head.weight.norm().item():.4f}")
        if bar is not None:
            bar.set_postfix(loss=f"{loss.item():.4f}")
            bar.update(1)
        else:
            log(f"step {step} loss={loss.item():.4f} step_time={dt*1000:.1f}ms")
    if bar is not None:
        bar.close()
    dist.barrier()
    log("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(run, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
