"""Small DDP regression/classification trainer on synthetic tabular data.

Launch with torchrun (env://), torch.multiprocessing.spawn (--spawn N) or plain python (single process).
--fault selects a bug that is triggered on --fault-rank at --fault-step (or on all ranks where noted).
"""
import argparse
import ctypes
import io
import logging
import math
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
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--resume-from", default="")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--sched", default="cosine")
p.add_argument("--manual-allreduce", action="store_true")
p.add_argument("--save-args", action="store_true")
p.add_argument("--wd-groups", action="store_true")
p.add_argument("--resume-optimizer", action="store_true")
args = p.parse_args()


def setup_log(rank):
    log = logging.getLogger("trainer")
    if args.use_logging:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        return log.info, log.warning
    return (lambda m: print(m, flush=True)), (lambda m: print("WARNING: " + m, flush=True))


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=64, n_cls=4, sparse_emb=False, inplace_bug=False, aux_head=False):
        super().__init__()
        self.cat_emb = nn.Embedding(32, 8, sparse=sparse_emb)
        self.fc1 = nn.Linear(d_in + 8, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)
        self.aux = nn.Linear(hidden, 1) if aux_head else None
        self.inplace_bug = inplace_bug

    def forward(self, x, cat, use_aux=True):
        e = self.cat_emb(cat)
        h = torch.cat([x, e], dim=1)
        h = self.fc1(h)
        h = torch.sigmoid(h)
        if self.inplace_bug:
            # "cheap" normalisation written in place
            h -= h.mean(dim=1, keepdim=True)
        else:
            h = h - h.mean(dim=1, keepdim=True)
        h = F.gelu(self.fc2(h))
        out = self.head(h)
        if self.aux is not None and use_aux:
            return out, self.aux(h).squeeze(-1)
        return out, None


def add_position_features(x, step):
    # appends a normalised step index column (only used by the curriculum code path)
    pos = torch.full((x.size(0), 1), step / 100.0)
    return torch.cat([x, pos], dim=1)


def fast_collate_native(buf_addr, n):
    # "zero copy" path: reads the pinned staging buffer by address
    return ctypes.string_at(buf_addr, n)


def save_checkpoint(state, path):
    buf = io.BytesIO()
    torch.save(state, buf)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(local_rank=None, spawn_world=0):
    distributed = False
    if spawn_world:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "45621")
        dist.init_process_group("gloo", rank=local_rank, world_size=spawn_world,
                                timeout=timedelta(seconds=args.pg_timeout))
        distributed = True
    elif "RANK" in os.environ or args.fault == "no_launcher":
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        distributed = True
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    info, warn = setup_log(rank)
    torch.manual_seed(1234)
    info(f"rank {rank}/{world} pid={os.getpid()} torch={torch.__version__} backend={'gloo' if distributed else 'none'}")

    # synthetic data: 16 numeric features + 1 categorical
    n = 2048
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 16, generator=g)
    C = torch.randint(0, 32, (n,), generator=g)
    w = torch.randn(16, 4, generator=g)
    Y = (X @ w).argmax(1)
    ds = TensorDataset(X, C, Y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
    loader = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, drop_last=True)

    hidden = args.hidden
    if args.fault == "model_mismatch" and rank == args.fault_rank:
        # this node picked up a stale config with a wider hidden layer
        hidden = int(os.environ.get("HIDDEN_OVERRIDE", args.hidden + 32))
    model = Net(hidden=hidden, sparse_emb=(args.fault == "sparse_adam"),
                inplace_bug=(args.fault == "inplace"), aux_head=(args.fault in ("unused", "none_unused")))
    nparams = sum(p.numel() for p in model.parameters())
    info(f"model params: {nparams}")
    if args.resume_from:
        info(f"resuming from {args.resume_from}")
        sd = torch.load(args.resume_from, map_location="cpu")
        model.load_state_dict(sd["model"])
    if distributed and args.manual_allreduce:
        for prm in model.parameters():
            dist.broadcast(prm.data, src=0)
    elif distributed:
        model = DDP(model, find_unused_parameters=args.find_unused)
    if args.wd_groups:
        decay = [p_ for n_, p_ in model.named_parameters() if p_.ndim > 1 and "emb" not in n_]
        no_decay = [p_ for n_, p_ in model.named_parameters() if not (p_.ndim > 1 and "emb" not in n_)]
        param_groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        param_groups = model.parameters()
    opt = torch.optim.Adam(param_groups, lr=args.lr) if args.fault == "sparse_adam" else \
        torch.optim.AdamW(param_groups, lr=args.lr, weight_decay=0.01)
    if args.resume_from and args.resume_optimizer:
        info("restoring optimizer state")
        opt.load_state_dict(sd["optimizer"])
    if args.sched == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    else:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.fault == "none_sched_order":
        sched.step()  # warm-start the schedule (emits the ordering warning)

    if args.fault == "alloc" and rank == args.fault_rank:
        pass

    pbar = None
    if args.progress and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100, file=sys.stderr)

    step = 0
    t0 = time.time()
    done = False
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, cat, y in loader:
            if step >= args.steps and args.sched != "onecycle":
                done = True
                break
            if args.sched == "onecycle" and step > args.steps:
                done = True
                break
            step += 1
            hit = (step == args.fault_step) and (rank == args.fault_rank or args.fault_rank < 0)
            if hit and args.fault == "shape":
                x = add_position_features(x, step)
            if hit and args.fault == "dtype":
                # re-weighting batch computed in numpy (float64)
                x = torch.from_numpy(x.numpy() * np.linspace(0.5, 1.5, x.shape[1]))
            if hit and args.fault == "segv":
                staging = fast_collate_native(int(os.environ.get("STAGING_BUF_ADDR", "0x6ffd00000000"), 16), x.numel() * 4)
            if hit and args.fault == "alloc":
                # activation-stats buffer sized from the dataset instead of the batch
                n_rows = len(ds) * 1024
                stats = torch.zeros(n_rows, n_rows // 8, dtype=torch.float32)
            if hit and args.fault == "fifo":
                info(f"step {step}: waiting for eval shard from stream")
                with open(os.path.join(os.path.dirname(__file__), "..", "work", "eval.fifo"), "rb") as f:
                    f.read(1)
            out, aux = model(x, cat, use_aux=not (args.fault == "unused" and step >= args.fault_step))
            loss = F.cross_entropy(out, y)
            if aux is not None:
                loss = loss + 0.1 * F.mse_loss(aux, y.float())
            opt.zero_grad(set_to_none=True)
            if args.fault == "backward_twice" and step >= args.fault_step:
                loss.backward()
                reg = 1e-3 * out.pow(2).mean()
                (loss + reg).backward()
            else:
                loss.backward()
            if distributed and args.manual_allreduce:
                for prm in model.parameters():
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            # metrics
            if distributed:
                acc = (out.argmax(1) == y).float().mean()
                metrics = [loss.detach(), acc]
                if args.fault == "collective" and rank == args.fault_rank and step >= args.fault_step:
                    metrics.append(gn.detach())  # rank-local grad-norm logging
                m = torch.stack(metrics)
                dist.all_reduce(m)
                m /= world
                lv, av = m[0].item(), m[1].item()
            else:
                lv, av = loss.item(), (out.argmax(1) == y).float().mean().item()
            if args.fault == "fifo_eval" and step == args.fault_step and distributed:
                if rank == args.fault_rank:
                    info(f"step {step}: reading eval shard from stream")
                    with open(os.path.join(os.path.dirname(__file__), "..", "work", "eval.fifo"), "rb") as f:
                        f.read(1)
                info(f"step {step}: eval sync")
                dist.monitored_barrier(timeout=timedelta(seconds=10))
            if args.fault == "fifo" and step == args.fault_step and distributed:
                info(f"step {step}: eval sync")
                dist.monitored_barrier(timeout=timedelta(seconds=10))
            if pbar is not None:
                pbar.update(1)
                pbar.set_postfix(loss=f"{lv:.4f}")
            if rank == 0 and (step % 5 == 0 or step == 1):
                msg = f"epoch {epoch} step {step}/{args.steps} loss {lv:.4f} acc {av:.3f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e} ({(time.time()-t0)/step:.3f}s/it)"
                if pbar is not None:
                    pbar.write(msg)
                else:
                    info(msg)
            if args.ckpt_dir and step % args.save_every == 0 and rank == 0:
                path = os.path.join(args.ckpt_dir, f"step_{step:05d}.pt")
                state = {"model": (model.module if hasattr(model, "module") else model).state_dict(),
                         "optimizer": opt.state_dict(), "step": step, **({"args": args} if args.save_args else {}),
                         "pad": torch.randn(int(os.environ.get("CKPT_PAD", "0")))}
                save_checkpoint(state, path)
                info(f"saved checkpoint {path}")
            time.sleep(args.sleep)
        if done:
            break
    if pbar is not None:
        pbar.close()
    if distributed:
        dist.barrier()
    info(f"training finished: {step} steps in {time.time()-t0:.1f}s final loss {lv:.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
