"""Token-classifier DDP training with rich tracebacks and a RichHandler logger.

Runs under torchrun (env://) or, with --spawn N, under torch.multiprocessing.spawn.
"""
import argparse
import ctypes
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from rich.logging import RichHandler
from rich.traceback import install

install(show_locals=False, width=120)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--resume", default="")
p.add_argument("--save", default="")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--lockfile", default="prep/.prefetch.lock")
args = p.parse_args()


import faulthandler
import threading

_metrics_lock = threading.Lock()
_metrics_buf = []


def flush_metrics(path):
    with _metrics_lock:
        with open(path, "a") as f:
            f.writelines(f"{m}\n" for m in _metrics_buf)
        _metrics_buf.clear()


def record_metric(rank, step, value, flush_every):
    with _metrics_lock:
        _metrics_buf.append(f"{rank},{step},{value:.5f}")
        if len(_metrics_buf) >= flush_every:
            flush_metrics(f"metrics_rank{rank}.csv")  # flush while still holding the lock


def setup_log(rank):
    logging.basicConfig(level=logging.INFO, format=f"[rank{rank}] %(message)s", datefmt="[%X]",
                        handlers=[RichHandler(rich_tracebacks=True, show_path=True, markup=False)])
    return logging.getLogger("tokcls")


class TokCls(nn.Module):
    def __init__(self, vocab, hidden, ncls=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.enc = nn.GRU(hidden, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, ncls)

    def forward(self, ids, inplace_gate=False):
        h, _ = self.enc(self.emb(ids))
        g = torch.sigmoid(self.proj(h))
        if inplace_gate:
            g.mul_(0.5)  # "cheap" gate damping added for the warmup phase
        return self.out(h * g)


def local_corpus(rank):
    g = torch.Generator().manual_seed(100 + rank)
    ids = torch.randint(0, 200, (512, 24), generator=g)
    if args.fault == "vocab-per-rank" and rank == args.fault_rank:
        ids[0, 0] = 257  # this shard contains ids beyond the base vocabulary
    labels = torch.randint(0, 5, (512, 24), generator=g)
    return ids, labels


def worker(rank, world):
    log = setup_log(rank)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    log.info("joined process group: world_size=%d backend=%s", world, dist.get_backend())
    ids, labels = local_corpus(rank)
    vocab = int(ids.max()) + 1 if args.fault == "vocab-per-rank" else 256
    # vocab sized from the data that this rank sees (bug: not synchronised across ranks)
    vocab = max(vocab, 256) if args.fault != "vocab-per-rank" else max(256, (vocab + 63) // 64 * 64)
    torch.manual_seed(0)
    model = TokCls(vocab, args.hidden)
    if args.resume:
        log.info("resuming from %s", args.resume)
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
    if args.fault == "stale-lock" and rank == args.fault_rank:
        log.info("waiting for prefetch lock %s", args.lockfile)
        while os.path.exists(args.lockfile):
            time.sleep(0.5)
    if args.fault == "stale-lock":
        dist.monitored_barrier(timeout=timedelta(seconds=12))
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    log.info("model ready: %d parameters", sum(p.numel() for p in model.parameters()))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    for step in range(args.steps):
        i = step * 16 % 512
        x, y = ids[i:i + 16], labels[i:i + 16]
        gate = args.fault == "inplace-gate" and rank == args.fault_rank and step >= args.fault_step
        logits = model(x, inplace_gate=gate)
        loss = lossf(logits.reshape(-1, 5), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fault == "native-crc" and rank == args.fault_rank and step == args.fault_step:
            # checksum via a ctypes helper; the buffer pointer is taken from a tensor freed above
            buf = ctypes.c_void_p(0x10)
            ctypes.string_at(buf, 64)
        if args.fault == "metrics-lock":
            if step == 0:
                print(f"[rank{rank}] watchdog: dumping stacks if no progress in 20s", flush=True)
            faulthandler.dump_traceback_later(20, exit=False)
            record_metric(rank, step, loss.item(), flush_every=args.fault_step if rank == args.fault_rank else 1000)
        log.info("step %d loss %.4f", step, loss.item())
        time.sleep(0.1)
    if args.save and rank == 0:
        torch.save({"model": model.module.state_dict(), "step": args.steps}, args.save)
        log.info("saved %s", args.save)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46530")
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46531")
        worker(0, 1)
