"""Small DDP/single-process trainer used to reproduce runs ended from outside or by a resource limit.

Flags pick what goes wrong, on which rank, at which step. Nothing here raises a fake error: the faults
are real allocations, real file handles, real native calls; the limits come from ulimit/prlimit/signals
applied from outside.
"""
import argparse
import ctypes
import logging
import os
import signal
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "big_embed", "step_buffer", "ckpt_copy", "worker_aug", "many_files",
                        "segv", "ckpt_filesize", "spin", "grad_skip"])
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--vocab", type=int, default=2000)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--ckpt-dir", default="/tmp/rr131ib_ckpt")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--bar", action="store_true")
p.add_argument("--sigterm-handler", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--sharing-fd", action="store_true")
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("trainer").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}" if distributed else msg, flush=True)

if args.sharing_fd:
    torch.multiprocessing.set_sharing_strategy("file_descriptor")

my_fault = args.fault if (args.fault_rank < 0 or args.fault_rank == rank) else "none"


class TokenData(Dataset):
    def __init__(self, n, seq, vocab, fault):
        self.n, self.seq, self.vocab, self.fault = n, seq, vocab, fault

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randint(0, self.vocab, (self.seq,), generator=g)
        if self.fault == "worker_aug" and i >= 16:
            # "augmentation" that builds a float64 noise table per sample (bug: size uses vocab*seq*seq)
            table = np.random.standard_normal((self.vocab * self.seq, self.seq * 64))
            x = (x + int(table[0, 0] > 9)) % self.vocab
        if self.fault == "many_files":
            # returns one small tensor per position instead of one tensor per sample
            return [x[j:j + 1].clone() for j in range(self.seq)], x.roll(-1)
        return x, x.roll(-1)


def collate(batch):
    xs, ys = zip(*batch)
    if isinstance(xs[0], list):
        xs = [torch.cat(parts) for parts in xs]
    return torch.stack(xs), torch.stack(ys)


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(
            [nn.TransformerEncoderLayer(hidden, 4, hidden * 2, dropout=0.0, batch_first=True) for _ in range(layers)])
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def _note_pid(name):
    d = os.environ.get("RR_PIDDIR")
    if d:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".pid"), "w") as f:
            f.write(str(os.getpid()))


def _worker_init(wid):
    _note_pid(f"rank{rank}_worker{wid}")


def main():
    _note_pid(f"rank{rank}")
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        log(f"initialized process group: world_size={world} backend={dist.get_backend()}")
    torch.manual_seed(0)
    if args.sigterm_handler:
        def on_term(signum, frame):
            log(f"caught signal {signal.Signals(signum).name}; writing emergency checkpoint and exiting")
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(args.ckpt_dir, f"emergency_rank{rank}.pt"))
            log("emergency checkpoint written")
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)

    vocab = args.vocab
    if my_fault == "big_embed":
        # config typo: vocab given in thousands twice (50257 * 1000 rows)
        vocab = args.vocab * 1000
        log(f"building model with vocab={vocab} hidden={args.hidden}")
    model = TinyLM(vocab, args.hidden)
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model built: {nparams/1e6:.2f}M parameters")
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    ds = TokenData(4096, 32, args.vocab, my_fault)
    sampler = DistributedSampler(ds, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                    collate_fn=collate, worker_init_fn=_worker_init, persistent_workers=args.workers > 0,
                    prefetch_factor=(8 if my_fault == "many_files" else 2) if args.workers else None)
    lossf = nn.CrossEntropyLoss()
    it = iter(dl)
    rng = range(1, args.steps + 1)
    if args.bar and rank == 0:
        from tqdm import tqdm
        rng = tqdm(rng, desc="train", dynamic_ncols=False, ncols=100)
    t0 = time.time()
    hoard = []
    for step in rng:
        x, y = next(it)
        if my_fault == "segv" and step == args.fault_step:
            # native helper from a custom extension handed a NULL buffer
            log("calling fused_stats kernel on activations buffer")
            ctypes.memmove(ctypes.c_void_p(16), x.numpy().tobytes(), 64)
        if my_fault == "step_buffer" and step >= args.fault_step:
            # metrics history kept as full logits copies (leak), grows every step
            hoard.append(torch.empty(64 * 1024 * 1024, dtype=torch.float32).fill_(0.0))
        if my_fault == "spin" and step == args.fault_step:
            log("recomputing token statistics for curriculum")
            acc = 0
            while True:
                acc = (acc * 1103515245 + 12345) % 2147483648
        out = model(x)
        loss = lossf(out.reshape(-1, out.size(-1)), y.reshape(-1))
        if my_fault == "grad_skip" and step in (args.fault_step, args.fault_step + 1):
            loss = loss * torch.tensor(float("inf"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(gn):
            warnings.warn(f"step {step}: non-finite gradient norm ({gn.item()}), skipping optimizer step")
            opt.zero_grad(set_to_none=True)
        else:
            opt.step()
        sched.step()
        if args.bar and rank == 0:
            rng.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 5 == 0 or step == 1:
            log(f"step {step}/{args.steps} loss={loss.item():.4f} grad_norm={gn.item():.3f} "
                f"lr={sched.get_last_lr()[0]:.2e} elapsed={time.time()-t0:.1f}s")
        if args.ckpt_every and step % args.ckpt_every == 0 and rank == 0:
            save_checkpoint(model, opt, step)
        time.sleep(args.step_sleep)
    if distributed:
        dist.barrier()
    log(f"training finished: {args.steps} steps in {time.time()-t0:.1f}s")
    if distributed:
        dist.destroy_process_group()


def save_checkpoint(model, opt, step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step{step:05d}.pt")
    m = model.module if hasattr(model, "module") else model
    log(f"saving checkpoint to {path}")
    if my_fault == "ckpt_copy":
        # snapshot for async save: deep copy of model + optimizer state, plus fp32 master copy x4 "for safety"
        snap = {k: v.detach().clone() for k, v in m.state_dict().items()}
        snap["_ema"] = [torch.zeros(256 * 1024 * 1024, dtype=torch.float32) for _ in range(4)]
        torch.save({"model": snap, "step": step}, path)
    elif my_fault == "ckpt_filesize":
        state = {"model": m.state_dict(), "optim": opt.state_dict(), "step": step}
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
    else:
        torch.save({"model": m.state_dict(), "optim": opt.state_dict(), "step": step}, path)
    log(f"checkpoint saved ({os.path.getsize(path)/1e6:.1f} MB)")


if __name__ == "__main__":
    main()
