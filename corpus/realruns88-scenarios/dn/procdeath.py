"""Tiny DDP trainer used to study how process deaths in multi-rank jobs are reported.

Launch with torchrun / python -m torch.distributed.run, with --spawn (torch.multiprocessing.spawn),
or one python per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set by hand.
--fault selects what goes wrong, --fault-rank on which rank, --fault-step at which step.
"""
import argparse
import ctypes
import logging
import mmap
import os
import pickle
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--spawn", type=int, default=0, help="world size for torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=38400)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--logstyle", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--data-dir", default="/work/rr88/dn/data")
p.add_argument("--ckpt-dir", default="/work/rr88/dn/ckpt")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-fileobj", type=int, default=0)
p.add_argument("--noise", type=int, default=0, help="emit healthy-run warnings")
p.add_argument("--monitored", type=int, default=0)
p.add_argument("--pidfile", default="")
args = p.parse_args()

log = logging.getLogger("train")


def out(rank, msg):
    if args.logstyle == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class ShardDataset(Dataset):
    """Reads fixed-size float32 records from a memory-mapped shard file."""

    def __init__(self, path, dim=16):
        self.dim = dim
        self.f = open(path, "r+b")
        self.mm = mmap.mmap(self.f.fileno(), 0)
        self.n = len(self.mm) // (4 * (dim + 1))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        off = i * 4 * (self.dim + 1)
        rec = np.frombuffer(self.mm[off: off + 4 * (self.dim + 1)], dtype=np.float32)
        if args.fault == "dlworker_segv" and torch.utils.data.get_worker_info() is not None \
                and int(os.environ.get("RANK", "0")) == args.fault_rank and i % 7 == 3:
            # decoder plugin hands back a NULL buffer for a bad record
            ctypes.memmove(ctypes.c_void_p(), b"x" * 16, 16)
        return torch.from_numpy(rec[:-1].copy()), torch.tensor(int(rec[-1]) % 4)


def make_shard(path, n=512, dim=16, seed=0):
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    y = rng.integers(0, 4, size=(n, 1)).astype(np.float32)
    np.concatenate([x, y], 1).tofile(path)


class Node:
    def __init__(self, prev, val):
        self.prev = prev
        self.val = val


def inject(rank, step, model, opt, state):
    f = args.fault
    if rank != args.fault_rank or step != args.fault_step:
        return
    if f == "segv":
        # reading a C buffer through a pointer that was never set
        buf = ctypes.c_void_p()  # pointer the native loader was supposed to fill
        ctypes.memset(buf.value or 0, 0, 64)
    elif f == "abort_doublefree":
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        buf = libc.malloc(64)
        libc.free(buf)
        libc.free(buf)
    elif f == "abort":
        libc = ctypes.CDLL("libc.so.6")
        libc.abort()
    elif f == "exit3":
        sys.exit(3)
    elif f == "osexit0":
        os._exit(0)
    elif f == "bigalloc":
        # build an eval cache of all activations (much larger than needed)
        state["cache"] = torch.zeros(64 * 1024 * 1024 * 8, dtype=torch.float32)  # 2 GiB
    elif f == "fdleak":
        # open every shard "for stats" and keep the handles around
        state.setdefault("handles", [])
        for i in range(4096):
            state["handles"].append(open(os.path.join(args.data_dir, f"shard_{rank}.bin"), "rb"))
    elif f == "deep_pickle":
        sys.setrecursionlimit(10 ** 7)
        head = None
        for i in range(300000):
            head = Node(head, i)
        state["history"] = head
        pickle.dumps(state["history"])
    elif f == "hang":
        # wait for the shared preprocessing job to release its lock
        lock = os.path.join(args.data_dir, ".preprocess.lock")
        open(lock, "a").close()
        while os.path.exists(lock):
            time.sleep(1)


def main_worker(rank, world):
    if args.logstyle == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    if args.pidfile:
        with open(f"{args.pidfile}.{rank}", "w") as fh:
            fh.write(str(os.getpid()))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    os.makedirs(args.data_dir, exist_ok=True)
    shard = os.path.join(args.data_dir, f"shard_{rank}.bin")
    make_shard(shard, seed=rank)
    ds = ShardDataset(shard)
    if args.noise:
        warnings.warn("torch.utils.data: shard record count is not a multiple of the batch size; "
                      "last partial batch will be dropped", UserWarning)
    sampler = DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers, drop_last=True,
                    persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    aux = nn.Linear(64, 4)  # auxiliary head, only used for eval
    full = nn.ModuleDict({"body": model, "aux": aux})
    ddp = DDP(full, find_unused_parameters=bool(args.noise))
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10, 0.5)
    if args.noise:
        sched.step()  # called before opt.step(): PyTorch warns about the order
    lossf = nn.CrossEntropyLoss()
    state = {}
    out(rank, f"world_size={world} params={sum(p.numel() for p in full.parameters())} "
              f"batches/epoch={len(dl)} fault={args.fault}@{args.fault_rank}:{args.fault_step}")
    it = iter(dl)
    bar = None
    if args.logstyle == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=90)
    for step in range(1, args.steps + 1):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl)
            x, y = next(it)
        inject(rank, step, ddp, opt, state)
        if args.monitored and step % 5 == 0:
            # make sure every rank is alive before the periodic eval/sync
            dist.monitored_barrier(timeout=timedelta(seconds=args.monitored), wait_all_ranks=True)
        logits = ddp(x)
        loss = lossf(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()
        if args.noise and step == 5 and rank == 0:
            warnings.warn(f"grad norm {gn.item() * 40:.1f} exceeds clip threshold 1.0 at step {step}; "
                          "clipping applied", RuntimeWarning)
        lt = loss.detach().clone()
        dist.all_reduce(lt)
        lt /= world
        if args.ckpt_every and step % args.ckpt_every == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"rank{rank}_step{step}.pt")
            big = {"model": full.state_dict(), "opt": opt.state_dict(), "step": step,
                   "replay": torch.randn(256, 1024)}
            if args.ckpt_fileobj:
                with open(path, "wb") as fh:
                    torch.save(big, fh)
            else:
                torch.save(big, path)
            out(rank, f"saved checkpoint {path}")
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{lt.item():.4f}")
        elif step % 5 == 0 and rank == 0 or args.logstyle == "logging" and step % 5 == 0:
            out(rank, f"step {step}/{args.steps} loss={lt.item():.4f} lr={sched.get_last_lr()[0]:.2e} "
                      f"grad_norm={gn.item():.3f}")
        time.sleep(args.sleep)
    if bar is not None:
        bar.close()
    dist.barrier()
    out(rank, "training finished")
    dist.destroy_process_group()


def _mdforward(self, x):
    h = self["body"][1](self["body"][0](x))
    out = self["body"][2](h)
    if args.noise:
        return out
    return out + 0.0 * self["aux"](h)


nn.ModuleDict.forward = _mdforward


def spawn_entry(rank, world):
    os.environ["RANK"] = str(rank)
    main_worker(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main_worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
