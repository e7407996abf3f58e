"""Small DDP training job used for elastic (torchrun) scenarios.

Flags select a fault, the global rank that hits it and the step.
"""
import argparse
import ctypes
import logging
import math
import os
import resource
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fail", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=10)
p.add_argument("--once", action="store_true", help="fault only on the first attempt (restart count 0)")
p.add_argument("--data-dir", default=None)
p.add_argument("--stream-dir", default="/tmp", help="where the shard streamer's FIFO lives")
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--ckpt-every", type=int, default=10)
p.add_argument("--resume", default=None)
p.add_argument("--save-namespace", action="store_true")
p.add_argument("--save-fileobj", action="store_true", help="write checkpoints through an open() file object")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--pylog", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noisy", action="store_true", help="emit the usual warnings")
p.add_argument("--sleep", type=float, default=0.15)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))

if args.pylog:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
        stream=sys.stdout,
    )
    log = logging.getLogger("train")
    say = log.info
    warn = log.warning
else:
    def say(msg):
        print(f"[rank{rank}] {msg}", flush=True)
    warn = say


def faulty(kind):
    if args.fail != kind or rank != args.fail_rank:
        return False
    if args.once and restart > 0:
        return False
    return True


class ShardDataset(torch.utils.data.Dataset):
    def __init__(self, path):
        blob = torch.load(path)
        self.x, self.y = blob["x"], blob["y"]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class DecodedDataset(torch.utils.data.Dataset):
    """Samples are decoded from small files on disk (one file per sample)."""
    def __init__(self, root, n, leak=False, crash_at=None):
        self.root, self.n, self.leak, self.crash_at = root, n, leak, crash_at
        self._open = []
        os.makedirs(root, exist_ok=True)
        for i in range(n):
            fn = os.path.join(root, f"s{i:05d}.bin")
            if not os.path.exists(fn):
                g = torch.Generator().manual_seed(i)
                torch.randn(16, generator=g).numpy().tofile(fn)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import numpy as np
        f = open(os.path.join(self.root, f"s{i:05d}.bin"), "rb")
        if self.leak:
            self._open.append(f)  # handle kept for "mmap reuse" and never closed
        buf = f.read()
        if not self.leak:
            f.close()
        if self.crash_at is not None and i % 97 == self.crash_at:
            ctypes.string_at(0)  # native decoder dereferences a bad header pointer
        x = torch.from_numpy(np.frombuffer(buf, dtype=np.float32).copy())
        return x, int((x[0] > 0).item()) + 2 * int((x[1] > 0).item())


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=64, n_cls=4, aux=False):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)
        if aux:
            self.aux_head = nn.Linear(hidden, n_cls)
        self.aux = aux

    def forward(self, x, use_aux=False):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        if self.aux and use_aux:
            return self.aux_head(h)
        return self.head(h)


def main():
    say(f"starting: world_size={world} local_rank={local_rank} restart_count={restart} pid={os.getpid()}")
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(1234)

    if args.noisy:
        scaler = torch.cuda.amp.GradScaler()  # config written for GPU nodes; warns and disables on CPU

    # ---- data
    if args.fail in ("fd-leak", "loader-segv"):
        ds = DecodedDataset(os.path.join(args.data_dir, "samples"), 512,
                            leak=faulty("fd-leak"), crash_at=(5 if faulty("loader-segv") else None))
    elif args.data_dir:
        shard = os.path.join(args.data_dir, f"shard-{rank:05d}.pt")
        say(f"loading shard {shard}")
        ds = ShardDataset(shard)
    else:
        g = torch.Generator().manual_seed(rank)
        n = 256
        if args.fail == "uneven" and rank == args.fail_rank:
            n = 96  # this node's data split is shorter
        x = torch.randn(n, 16, generator=g)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        ds = torch.utils.data.TensorDataset(x, y)
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers, drop_last=True,
                                     persistent_workers=args.workers > 0)
    say(f"dataset: {len(ds)} samples, {len(dl)} batches/epoch")

    hidden = args.hidden
    if args.fail == "model-mismatch" and rank == args.fail_rank:
        hidden = int(os.environ.get("HIDDEN_OVERRIDE", hidden))
    model = Net(hidden=hidden, aux=(args.fail == "unused"))
    start_step = 0
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if args.resume:
        say(f"resuming from {args.resume}")
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start_step = ck["step"]
        say(f"resumed at step {start_step}")
    ddp = DDP(model, find_unused_parameters=args.noisy)

    it = iter(dl)
    rng = range(start_step, args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        rng = tqdm(rng, desc="train", dynamic_ncols=False, ncols=90, mininterval=0.5)
    step = start_step
    for step in rng:
        try:
            xb, yb = next(it)
        except StopIteration:
            if args.fail == "uneven":
                say(f"epoch finished after {step} steps")
                break
            it = iter(dl)
            xb, yb = next(it)

        if step == args.fail_step:
            if faulty("segv"):
                # custom fused op reads a freed buffer
                ctypes.string_at(0)
            if faulty("oom"):
                # cap this worker's address space like a cgroup/ulimit would, then build a prefetch cache
                soft = resource.getrlimit(resource.RLIMIT_AS)
                vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
                resource.setrlimit(resource.RLIMIT_AS, (vm + 256 * 2**20, soft[1]))
                say("building activation cache for eval")
                cache = torch.empty(1 << 30, dtype=torch.float32)  # 4 GiB
                cache.zero_()
            if faulty("hang") or faulty("monitored"):
                fifo = os.path.join(args.stream_dir, "next_shard.fifo")
                say(f"waiting for next shard from {fifo}")
                with open(fifo, "rb") as f:  # no writer on the other end: blocks forever
                    f.read()
            if faulty("shape"):
                xb = torch.cat([xb, xb[:, :4]], dim=1)  # feature engineering bug on this rank
            if faulty("inf"):
                xb = xb.clone()
                xb[3, 5] = float("inf")

        if args.fail == "monitored" and step > 0 and step % 8 == 0:
            dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)

        out = ddp(xb, use_aux=(args.fail == "unused" and step % 2 == 1))
        loss = F.cross_entropy(out, yb)
        if not math.isfinite(loss.item()):
            raise RuntimeError(f"Loss is {loss.item()} at step {step}, stopping training.")
        opt.zero_grad()
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

        if step % 5 == 0 or step == args.steps - 1:
            stats = torch.tensor([loss.item(), (out.argmax(1) == yb).float().mean().item()])
            if args.fail == "collective" and rank == args.fail_rank and step >= args.fail_step:
                stats = torch.cat([stats, torch.tensor([float(len(xb))])])  # extra metric only on this rank
            dist.all_reduce(stats)
            stats /= world
            if rank == 0:
                msg = f"step {step:4d} loss {stats[0]:.4f} acc {stats[1]:.3f} lr {args.lr:.3g}"
                if args.tqdm:
                    rng.write(msg)
                else:
                    say(msg)
        if gnorm > 1.0 and step < 4:
            warn(f"grad norm {gnorm:.2f} > 1.0 at step {step}, clipped")

        if args.ckpt_dir and rank == 0 and step > 0 and step % args.ckpt_every == 0:
            path = os.path.join(args.ckpt_dir, f"ckpt-step{step}.pt")
            blob = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step,
                    "args": args if args.save_namespace else vars(args)}
            if args.save_fileobj:
                with open(path, "wb") as fh:
                    torch.save(blob, fh)
            else:
                torch.save(blob, path)
            say(f"saved checkpoint {path}")
        time.sleep(args.sleep)

    dist.barrier()
    say(f"done at step {step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
