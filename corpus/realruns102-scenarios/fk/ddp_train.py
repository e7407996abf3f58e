"""Small DDP / single-process regression+classification trainer on synthetic data.

Faults (--fault): none, huge_lr, anomaly, float64_feats, unused_branch, cfg_mismatch,
ddp_attr, big_gather, onecycle_total, target_float
--fault-rank selects which rank behaves differently (where that applies), --fault-step when.
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--log-ts", action="store_true", help="python logging with timestamps")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--grad-clip", type=float, default=1.0)
p.add_argument("--opt", default="adamw")
p.add_argument("--find-unused", action="store_true")
args = p.parse_args()

distributed = "RANK" in os.environ or args.fault == "need_dist"
if args.log_ts:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("trainer")


def say(msg):
    if args.log_ts:
        log.info(msg)
    else:
        print(msg, flush=True)


class Net(nn.Module):
    def __init__(self, d_in, hidden, n_cls, aux=False):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, 1) if aux else None

    def forward(self, x, use_aux=False):
        h = self.enc(x)
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            out = out + self.aux_head(h)
        return out


def main():
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=40))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(0)
    n, d, k = 2048, 32, 4
    rng = np.random.default_rng(1234)
    X = rng.normal(size=(n, d))  # float64 like pandas/numpy features
    W = rng.normal(size=(d, k))
    y = (X @ W).argmax(1)
    if args.fault == "float64_feats":
        # feature pipeline refactor: forgot the .astype(np.float32) on the rank that loads a new shard
        Xt = torch.from_numpy(X) if rank == args.fault_rank else torch.from_numpy(X.astype(np.float32))
    else:
        Xt = torch.from_numpy(X.astype(np.float32))
    if args.fault == "target_float":
        yt = torch.from_numpy(y.astype(np.float32))  # labels read back from a CSV column as float
    else:
        yt = torch.from_numpy(y)
    ds = TensorDataset(Xt, yt)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    dl = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None, drop_last=True)

    hidden = args.hidden
    if args.fault == "cfg_mismatch" and rank == args.fault_rank:
        hidden = args.hidden * 2  # this node read a stale config.yaml
    model = Net(d, hidden, k, aux=args.fault == "unused_branch")
    say(f"[rank {rank}] model params: {sum(p.numel() for p in model.parameters())}")
    if distributed:
        model = DDP(model, find_unused_parameters=args.find_unused)
    if args.opt == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = None
    if args.fault in ("onecycle_total",):
        # total_steps computed from a hard-coded dataset size that is stale
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=40)
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
        say("anomaly detection enabled (debug run)")

    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in dl:
            step += 1
            if args.fault == "anomaly" and rank == args.fault_rank and step >= args.fault_step:
                xb = xb * 400.0  # shard written before the feature scaler was applied
            out = model(xb, use_aux=False) if args.fault == "unused_branch" else model(xb)
            if args.fault == "anomaly":
                # label-smoothing loss ported from a paper repo: manual log(softmax)
                logp = torch.log(F.softmax(out, dim=1))
                loss = 0.9 * F.nll_loss(logp, yb) - 0.1 * logp.mean()
            else:
                loss = F.cross_entropy(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip,
                                                error_if_nonfinite=args.fault == "huge_lr")
            opt.step()
            if sched is not None:
                sched.step()
            if step % 5 == 0 or step == 1:
                acc = (out.argmax(1) == yb).float().mean().item()
                lr = opt.param_groups[0]["lr"]
                say(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} acc {acc:.3f} "
                    f"grad_norm {gn.item():.3f} lr {lr:.2e} ({(time.time()-t0)/step*1000:.0f} ms/step)")
            if step >= args.steps:
                break
        if step >= args.steps:
            break
        if args.fault == "ddp_attr":
            # end-of-epoch eval helper written for the single-GPU version
            with torch.no_grad():
                emb = model.enc(Xt[:8])
                say(f"[rank {rank}] eval embedding norm {emb.norm():.3f}")
    if args.fault == "big_gather" and rank == args.fault_rank:
        # rank 0 collects all predictions for a confusion matrix over a 'full' eval set
        n_eval = 3_000_000
        say(f"[rank {rank}] allocating eval buffer for {n_eval} x {hidden} logits")
        buf = torch.empty(n_eval, 4096)
        buf.zero_()
    if distributed:
        dist.barrier()
    say(f"[rank {rank}] done: {step} steps, final loss {loss.item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
