#!/usr/bin/env python
"""DDP training of a small MLP classifier on per-rank tabular shards.

Each rank builds its own shard (as if read from shard-{rank:05d}.npz). Flags
select a bug that a real script could contain, on a chosen rank and step.
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

FAULTS = [
    "none", "dtype", "shape", "unused", "model_mismatch", "inplace", "eval_attr",
    "eval_keyerror", "uneven", "collective", "skip_barrier", "backward_twice",
    "nonscalar", "view", "target", "unused_warn", "noisy",
]


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--classes", type=int, default=5)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-every", type=int, default=20)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=0)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--find-unused", action="store_true")
    return p.parse_args()


class Classifier(nn.Module):
    def __init__(self, features, hidden, classes, aux_head=False):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)
        if aux_head:
            self.aux = nn.Linear(hidden, 1)
        self.gate = nn.Linear(hidden, hidden)

    def forward(self, x, use_gate=True, inplace_act=False):
        h = self.encoder(x)
        if inplace_act:
            s = torch.sigmoid(h)
            s.mul_(0.5)  # "cheap temperature" applied in place
            h = s * h
        else:
            h = F.gelu(h)
        if use_gate:
            h = h * torch.sigmoid(self.gate(h))
        return self.head(self.norm(h))


def make_shard(rank, n, features, classes, seed, fault, fault_rank):
    rng = np.random.default_rng(seed + rank)
    x = rng.standard_normal((n, features))
    if fault == "shape" and rank == fault_rank:
        # this shard was exported with the extra "timestamp" column still present
        x = np.concatenate([x, rng.standard_normal((n, 1))], axis=1)
    y = rng.integers(0, classes, size=n)
    if fault == "dtype" and rank == fault_rank:
        # shard stored as float64 .npy; the other shards were cast on export
        xt = torch.from_numpy(x)
    else:
        xt = torch.from_numpy(x.astype(np.float32))
    yt = torch.from_numpy(y)
    if fault == "target" and rank == fault_rank:
        yt = F.one_hot(yt, classes).float()[:, :classes - 1]  # label smoothing export dropped a column
    return TensorDataset(xt, yt)


def main():
    args = get_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")

    def info(msg):
        if args.use_logging:
            log.info(msg)
        else:
            print(f"[rank {rank}] {msg}", flush=True)

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(1234)
    info(f"initialized process group: world_size={world} local_rank={local_rank} backend={dist.get_backend()}")

    n = args.steps_per_epoch * args.batch_size
    if args.fault == "uneven" and rank == args.fault_rank:
        n = n // 2  # last shard is shorter: the dataset size is not a multiple of world_size * shard_size
    ds = make_shard(rank, n, args.features, args.classes, 0, args.fault, args.fault_rank)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    info(f"loaded shard-{rank:05d}.npz: {len(ds)} samples, {len(loader)} batches/epoch")

    aux = args.fault == "model_mismatch" and rank == args.fault_rank
    model = Classifier(args.features, args.hidden, args.classes, aux_head=aux)
    if aux:
        info("auxiliary regression head enabled (AUX_LOSS_WEIGHT from environment)")
    find_unused = args.find_unused or args.fault == "unused_warn"
    ddp = DDP(model, find_unused_parameters=find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)

    if args.fault == "noisy":
        scaler = torch.amp.GradScaler("cuda", enabled=True)

    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        ddp.train()
        it = loader
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(loader, desc=f"epoch {epoch}", file=sys.stdout, mininterval=0, ncols=90)
        for xb, yb in it:
            step += 1
            faulty = args.fault_rank in (-1, rank) and step >= args.fault_step
            use_gate = not (args.fault == "unused" and faulty)
            inplace = args.fault == "inplace" and faulty
            logits = ddp(xb, use_gate=use_gate, inplace_act=inplace)
            if args.fault == "nonscalar" and faulty:
                loss = F.cross_entropy(logits, yb, reduction="none")  # per-sample weighting refactor
            else:
                loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if args.fault == "backward_twice" and faulty:
                # "extra" consistency regulariser re-uses logits from the same graph
                reg = 0.01 * logits.pow(2).mean()
                (loss + reg).backward()
            if args.fault == "noisy" and step % 17 == 0:
                gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e-3)
                print(f"[rank {rank}] WARNING grad norm {gn:.3f} exceeds clip 0.001; clipping", flush=True)
            opt.step()
            if args.fault == "collective" and faulty and step == args.fault_step:
                # per-rank accuracy bookkeeping: this rank packs (correct, total, loss)
                stats = torch.tensor([1.0, 2.0, loss.item()])
            elif args.fault == "collective" and step == args.fault_step:
                stats = torch.tensor([1.0, 2.0])
            if args.fault == "collective" and step == args.fault_step:
                dist.all_reduce(stats)
            if step % args.log_every == 0:
                lval = loss.detach().clone()
                dist.all_reduce(lval)
                lval /= world
                if rank == 0:
                    msg = f"epoch {epoch} step {step} loss {lval.item():.4f} lr {args.lr:.2e} elapsed {time.time()-t0:.1f}s"
                    if args.tqdm:
                        it.write(msg)
                    else:
                        info(msg)
            if step % args.eval_every == 0:
                evaluate(ddp, ds, args, rank, world, step, info)
        if args.fault == "skip_barrier" and rank == args.fault_rank:
            info(f"epoch {epoch} done; skipping sync (fast path for last rank)")
        else:
            dist.monitored_barrier(timeout=timedelta(seconds=10)) if args.fault == "skip_barrier" else dist.barrier()
        info(f"epoch {epoch} finished")
    if rank == 0:
        info("training complete, saving final weights")
    dist.barrier()
    dist.destroy_process_group()


@torch.no_grad()
def evaluate(ddp, ds, args, rank, world, step, info):
    ddp.eval()
    correct = torch.zeros(1)
    total = torch.zeros(1)
    metrics = {"acc": 0.0, "loss": 0.0}
    for i in range(0, len(ds), 64):
        xb, yb = ds[i:i + 64]
        logits = ddp(xb)
        if args.fault == "eval_attr" and rank == args.fault_rank and step >= args.fault_step:
            # class-balanced accuracy uses the head size
            ncls = ddp.head.out_features
        if args.fault == "eval_keyerror" and rank == args.fault_rank and step >= args.fault_step:
            metrics["top5_acc"] += 0.0
        pred = logits.argmax(-1)
        correct += (pred == (yb if yb.dim() == 1 else yb.argmax(-1))).sum()
        total += yb.shape[0]
    dist.all_reduce(correct)
    dist.all_reduce(total)
    if rank == 0:
        info(f"eval step {step}: acc={(correct / total).item():.4f}")
    ddp.train()


if __name__ == "__main__":
    main()
