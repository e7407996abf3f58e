"""Hand-written DDP training loop (gloo, CPU) with selectable real-world bugs.

Launch with torchrun / python -m torch.distributed.run, or --spawn N for torch.multiprocessing.spawn.
"""
import argparse
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
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--seq", type=int, default=16)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data-dir", default="/work/rr100/fc/tmp/data")
p.add_argument("--ckpt-dir", default="/work/rr100/fc/tmp/ckpt")
p.add_argument("--resume", default="")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--logstyle", choices=["logging", "print", "tqdm"], default="logging")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=42350)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--num-replicas", type=int, default=0)
p.add_argument("--sched", default="")
p.add_argument("--wd-groups", action="store_true")
p.add_argument("--pidfile", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--sched-first", action="store_true")
args = p.parse_args()


class TokenDataset(Dataset):
    """Synthetic LM data; optionally reads token shards from files."""

    def __init__(self, n, seq, vocab, rank, fault):
        self.n, self.seq, self.vocab, self.rank, self.fault = n, seq, vocab, rank, fault
        g = torch.Generator().manual_seed(1234)
        self.data = torch.randint(0, vocab, (n, seq + 1), generator=g)
        self.lengths = [seq + 1] * n
        if fault == "collate_ragged":
            # records coming from a tokenizer without padding: lengths vary
            self.lengths = [seq + 1 - (i % 5) for i in range(n)]
        self.meta = {i: {"src": f"shard-{i // 32:03d}"} for i in range(n)}
        if fault == "worker_keyerror":
            del self.meta[args.fault_step * args.bs + 5]
        self.open_files = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.fault == "fd_leak":
            # each sample re-opens its shard and keeps the handle (cache that never closes)
            path = os.path.join(args.data_dir, f"shard-{i % 16:03d}.bin")
            fh = open(path, "rb")
            self.open_files.append(fh)
            _ = fh.read(8)
        src = self.meta[i]["src"]
        row = self.data[i, : self.lengths[i]]
        if self.fault == "tok_oob" and self.rank == args.fault_rank and i % 7 == 0:
            # tokenizer has extra special tokens appended after the model vocab was fixed
            row = row.clone()
            row[-2] = self.vocab + 3
        return row[:-1], row[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, seq, aux_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.zeros(seq, hidden))
        self.block = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                   nn.Linear(4 * hidden, hidden))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)
        if aux_head:
            self.aux = nn.Linear(hidden, 2)
        self.config = {"vocab": vocab, "hidden": hidden}

    def forward(self, x, use_aux=False):
        h = self.emb(x) + self.pos[: x.shape[1]]
        h = h + self.block(h)
        h = self.ln_f(h)
        out = self.head(h)
        if use_aux:
            return out, self.aux(h.mean(1))
        return out


def setup_logger(rank):
    logger = logging.getLogger("train")
    if args.logstyle == "logging":
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(logging.Formatter(
            f"%(asctime)s %(levelname)-7s [rank{rank}] %(name)s: %(message)s"))
        logger.addHandler(h)
        logger.setLevel(logging.INFO)
    return logger


def log(logger, rank, msg, level="info", all_ranks=False):
    if not all_ranks and rank != 0:
        return
    if args.logstyle == "logging":
        getattr(logger, level)(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


def main(rank=None, world=None):
    if rank is not None:  # mp.spawn path
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                          RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    if args.fault == "hidden_cfg":
        # per-node config file read from an env var that was only set on some ranks
        args.hidden = int(os.environ.get("MODEL_HIDDEN", args.hidden)) if os.environ.get("RANK") == str(args.fault_rank) else args.hidden
        if os.environ.get("RANK") == str(args.fault_rank):
            args.hidden = 96
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    logger = setup_logger(rank)
    log(logger, rank, f"initialized gloo process group: world_size={world} pid={os.getpid()}", all_ranks=True)

    ds = TokenDataset(args.bs * args.steps * world * 2, args.seq, args.vocab, rank, args.fault)
    nrep = args.num_replicas or world
    sampler = DistributedSampler(ds, num_replicas=nrep, rank=rank, shuffle=True, seed=42)
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers,
                    drop_last=True, persistent_workers=False)

    seq = args.seq
    model = TinyLM(args.vocab, args.hidden, seq, aux_head=args.fault in ("unused_aux", "healthy_unused"))
    if args.fault == "frozen_all":
        for prm in model.parameters():
            prm.requires_grad_(False)
    nparams = sum(p_.numel() for p_ in model.parameters())
    log(logger, rank, f"model params: {nparams/1e3:.1f}K hidden={args.hidden} vocab={args.vocab}", all_ranks=args.fault == "hidden_cfg")
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    if args.wd_groups:
        decay = [p_ for n_, p_ in ddp.named_parameters() if p_.ndim >= 2]
        no_decay = [p_ for n_, p_ in ddp.named_parameters() if p_.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    else:
        opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)
    if args.pidfile:
        os.makedirs("/work/rr100/fc/tmp/pids", exist_ok=True)
        with open(f"/work/rr100/fc/tmp/pids/rank{rank}.pid", "w") as f:
            f.write(str(os.getpid()))
    sched = None
    if args.sched == "onecycle":
        # total_steps computed from the per-rank step count of a previous config
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=min(len(dl), args.steps))
    elif args.sched == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    start_step = 0
    if args.resume:
        log(logger, rank, f"resuming from {args.resume}", all_ranks=True)
        ckpt = torch.load(args.resume, map_location="cpu")
        if args.fault == "resume_bare_model":
            model_to_load = TinyLM(args.vocab, args.hidden, seq)
            model_to_load.load_state_dict(ckpt["model"])
        else:
            ddp.module.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optim"])
        start_step = ckpt["step"]
        log(logger, rank, f"resumed at step {start_step}")

    if args.fault == "stuck_fifo" and rank == args.fault_rank:
        fifo = os.path.join(args.data_dir, "stream.fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)

    step = start_step
    t0 = time.time()
    it = None
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        batches = dl
        if args.logstyle == "tqdm" and rank == 0:
            from tqdm import tqdm
            batches = tqdm(dl, total=min(len(dl), args.steps), desc=f"epoch {epoch}", dynamic_ncols=False, ncols=100)
        for x, y in batches:
            if step - start_step >= args.steps * (epoch + 1):
                break
            if args.step_sleep:
                time.sleep(args.step_sleep)
            step += 1
            fr = rank == args.fault_rank and step == args.fault_step
            if args.fault == "dtype_numpy" and fr:
                # features came through numpy augmentation -> float64
                noise = torch.from_numpy(np.random.normal(0, 0.02, (x.shape[0], x.shape[1], args.hidden)))
                h = ddp.module.emb(x) + noise
                logits = ddp.module.head(h)
            elif args.fault == "shape_seq" and fr:
                # this rank's loader switched to the long-context bucket
                x = torch.cat([x, x], dim=1)
                y = torch.cat([y, y], dim=1)
                logits = ddp(x)
            elif args.fault in ("unused_aux", "healthy_unused"):
                use_aux = args.fault == "healthy_unused" or step % 4 == 0
                out = ddp(x, use_aux=use_aux)
                logits = out[0] if isinstance(out, tuple) else out
            elif args.fault == "stuck_fifo" and fr:
                log(logger, rank, "refilling stream buffer from " + fifo, all_ranks=True)
                with open(fifo, "rb") as fh:  # blocks: producer process never started
                    fh.read(4096)
                logits = ddp(x)
            elif args.fault == "slow_eval" and rank == args.fault_rank and step == args.fault_step:
                log(logger, rank, "running validation on rank 0 only ...", all_ranks=True)
                t_eval = time.time()
                while time.time() - t_eval < args.pg_timeout + 25:
                    _ = torch.randn(256, 256) @ torch.randn(256, 256)
                    time.sleep(0.05)
                logits = ddp(x)
            else:
                logits = ddp(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            if args.fault == "unused_aux" and isinstance(out, tuple):
                loss = loss + 0.1 * out[1].pow(2).mean()
            if args.fault == "healthy_unused":
                loss = loss + 0.0 * out[1].sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            if sched is not None and args.sched_first:
                sched.step()
            opt.step()
            if sched is not None and not args.sched_first:
                sched.step()
            # metrics reduction
            if args.fault == "metric_extra" and rank == args.fault_rank:
                # rank 0 also tracks the eval perplexity it computed
                stats = torch.tensor([loss.item(), gnorm.item(), 1.0, math.exp(min(loss.item(), 20))])
            else:
                stats = torch.tensor([loss.item(), gnorm.item(), 1.0])
            if args.fault == "skip_reduce" and rank == args.fault_rank and step == args.fault_step:
                pass
            else:
                dist.all_reduce(stats)
            if args.fault == "monitored" and step == args.fault_step:
                if rank == args.fault_rank:
                    log(logger, rank, "writing sample generations to disk ...", all_ranks=True)
                    time.sleep(args.pg_timeout + 20)
                dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
            if step % 2 == 0 or step == 1:
                lr = opt.param_groups[0]["lr"]
                msg = (f"epoch {epoch} step {step} loss {stats[0].item()/world:.4f} "
                       f"grad_norm {stats[1].item()/world:.3f} lr {lr:.2e} "
                       f"tok/s {step*args.bs*args.seq*world/(time.time()-t0):.0f}")
                if args.logstyle == "tqdm" and rank == 0:
                    batches.set_postfix(loss=f"{stats[0].item()/world:.3f}")
                else:
                    log(logger, rank, msg)
            if args.fault == "ddp_attr" and step == args.fault_step and rank == 0:
                log(logger, rank, f"vocab in config: {ddp.config['vocab']}")
            if args.save_every and step % args.save_every == 0:
                save(ddp, opt, step, rank, logger)
    if args.fault == "ddp_attr":
        pass
    log(logger, rank, f"training finished: {step} steps in {time.time()-t0:.1f}s")
    if args.save_every:
        save(ddp, opt, step, rank, logger)
    dist.barrier()
    dist.destroy_process_group()


def save(ddp, opt, step, rank, logger):
    if rank != 0:
        dist.barrier()
        return
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step:06d}.pt")
    state = {"model": ddp.state_dict() if args.fault == "save_wrapped" else ddp.module.state_dict(),
             "optim": opt.state_dict(), "step": step}
    if args.fault == "save_args":
        state["args"] = args
    torch.save(state, path)
    log(logger, rank, f"saved checkpoint {path}")
    dist.barrier()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
