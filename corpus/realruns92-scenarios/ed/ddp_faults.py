"""Small DDP training loop (gloo, CPU) with selectable, realistic process-death faults.

Launch with torchrun / python -m torch.distributed.run, or --spawn N (torch.multiprocessing.spawn),
or as a plain single process.

--fault selects what goes wrong on --fault-rank at --fault-step:
  none        healthy
  segv        ctypes reads a pinned-buffer pointer that was never registered (NULL) -> SIGSEGV
  cassert     C helper called with num_buckets=0 through the asserting entry point -> SIGABRT
  sigfpe      C helper called with num_buckets=0 (integer modulo by zero) -> SIGFPE
  abort       fail-fast consistency check calls os.abort() -> SIGABRT
  sigbus      rank 0 regenerates the shared token cache in place while other ranks memory-map it -> SIGBUS
  memcap      every rank caps its address space (--max-host-mem-gb); fault rank gets an over-long batch
  exit3       per-rank (not all-reduced) early stopping calls sys.exit(3) on the fault rank only
  ckpt        rank 0 writes a large checkpoint each --ckpt-every steps (used with ulimit -f)
  cpu         rank 0 runs an extra eval pass each step (used with ulimit -t)
  wait        nothing; ranks write pid files so an outside process can signal them (--pid-dir)
"""
import argparse
import ctypes
import datetime
import faulthandler
import logging
import math
import os
import random
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=6)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-sleep", type=float, default=0.2)
    p.add_argument("--faulthandler", action="store_true")
    p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=39950)
    p.add_argument("--pid-dir", default="")
    p.add_argument("--work-dir", default="/tmp/rr92ed_work")
    p.add_argument("--max-host-mem-gb", type=float, default=0)
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--helper", action="store_true", help="run git/nvidia-smi helpers for run metadata")
    p.add_argument("--noise", action="store_true", help="trigger the usual harmless warnings")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--patience", type=int, default=2)
    return p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab=512, d=64, layers=2, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(4096, d)
        enc = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        pos = torch.arange(x.shape[1]).unsqueeze(0)
        h = self.emb(x) + self.pos(pos)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        h = self.enc(h, mask=mask, is_causal=True)
        return self.head(h)


def make_logger(args, rank):
    if args.log_style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
            stream=sys.stdout,
        )
        log = logging.getLogger("train")
        return log.info, log.warning
    pr = lambda m: print(f"[rank{rank}] {m}", flush=True)
    return pr, pr


def write_pid(args, rank):
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))


def run_metadata(info, warn):
    # best-effort metadata, like many training repos do
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        warn(f"could not determine git commit (exit {r.returncode}): {r.stderr.strip()}")
    else:
        info(f"git commit {r.stdout.strip()}")
    try:
        subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv"], check=True)
    except FileNotFoundError as e:
        warn(f"nvidia-smi unavailable ({e}); assuming CPU-only node")
    r = subprocess.run([sys.executable, "-c", "import pynvml"], capture_output=True, text=True)
    if r.returncode != 0:
        warn("GPU telemetry helper exited with status %d:\n%s" % (r.returncode, r.stderr.strip()))


class PinnedRegistry:
    """Keeps raw addresses of staging buffers handed to a native reader."""

    def __init__(self):
        self._bufs = {}
        self._addr = {}

    def register(self, key, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self._bufs[key] = buf
        self._addr[key] = ctypes.addressof(buf)

    def read(self, key, nbytes):
        ptr = self._addr.get(key, 0)
        header = ctypes.string_at(ptr)  # NUL-terminated record header written by the reader
        return header[:nbytes]


def main_worker(local_rank, args, world_from_spawn=0):
    if world_from_spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        rank, world = local_rank, world_from_spawn
    else:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
    if args.faulthandler:
        faulthandler.enable()
    info, warn = make_logger(args, rank)
    write_pid(args, rank)
    distributed = world > 1 or "RANK" in os.environ
    if distributed:
        if world_from_spawn:
            dist.init_process_group("gloo", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=args.pg_timeout))
        else:
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    info(f"world_size={world} pid={os.getpid()} fault={args.fault} fault_rank={args.fault_rank}")

    if args.max_host_mem_gb:
        import resource
        cap = int(args.max_host_mem_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        info(f"host memory cap set: RLIMIT_AS={args.max_host_mem_gb} GiB")

    if args.helper and rank == 0:
        run_metadata(info, warn)

    model = TinyLM(d=args.d_model)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.noise:
        sched.step()  # harmless ordering warning many repos trigger
        warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
    start_step = 0
    if args.resume and args.ckpt_dir and os.path.exists(os.path.join(args.ckpt_dir, "last.pt")):
        ck = torch.load(os.path.join(args.ckpt_dir, "last.pt"), map_location="cpu")
        (model.module if distributed else model).load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        start_step = ck["step"] + 1
        info(f"resumed from {args.ckpt_dir}/last.pt at step {start_step}")

    # token cache shared by all ranks (memory-mapped)
    os.makedirs(args.work_dir, exist_ok=True)
    cache = os.path.join(args.work_dir, "tokens.u16")
    if rank == 0:
        rng = np.random.default_rng(0)
        (rng.zipf(1.3, size=4_000_000) % 512).astype(np.uint16).tofile(cache)
    if distributed:
        dist.barrier()
    tokens = np.memmap(cache, dtype=np.uint16, mode="r")

    fast = ctypes.CDLL(os.path.join(HERE, "libfastops.so"))
    fast.bucketize.restype = ctypes.c_long
    fast.bucketize_checked.restype = ctypes.c_long
    reg = PinnedRegistry()
    reg.register("tokens", 4096)

    best, bad = float("inf"), 0
    val_x = torch.from_numpy(np.array(tokens[rank * 10000: rank * 10000 + 8 * (args.seq + 1)], dtype=np.int64)).view(8, -1)
    it = range(start_step, args.steps)
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    rs = np.random.default_rng(1000 + rank)
    for step in it:
        t0 = time.time()
        seq = args.seq
        bs_override = 0
        if args.fault == "memcap" and rank == args.fault_rank and step == args.fault_step:
            seq, bs_override = 4000, 64  # packed long documents: this batch is far bigger than the rest
        bs = bs_override or args.batch
        offs = rs.integers(0, len(tokens) - bs * (seq + 1) - 1)
        if args.fault == "sigbus" and rank == 0 and step == args.fault_step:
            # regenerate the cache "in place" (truncate + rewrite) while other ranks still map it
            with open(cache, "wb") as f:
                f.write(b"")
            info("token cache refreshed")
        if args.fault == "sigbus" and rank != 0 and step == args.fault_step + 1:
            time.sleep(0.5)
            offs = len(tokens) - bs * (seq + 1) - 2
        chunk = np.array(tokens[offs: offs + bs * (seq + 1)], dtype=np.int64)
        if len(chunk) < bs * (seq + 1):
            chunk = np.resize(chunk, bs * (seq + 1))
        x = torch.from_numpy(chunk).view(bs, seq + 1)

        # bucketize ids with the native helper (used for the length-bucketing sampler stats)
        nb = 16
        if args.fault in ("sigfpe", "cassert") and rank == args.fault_rank and step == args.fault_step:
            nb = len([b for b in [] if b])  # bucket boundaries list came back empty on this shard
        ids = np.ascontiguousarray(chunk[:256])
        out = np.empty_like(ids)
        fn = fast.bucketize_checked if args.fault == "cassert" else fast.bucketize
        fn(ids.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(len(ids)),
           out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(nb))

        if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
            reg.read("tokens_val", 4096)  # key was never registered on this rank
        else:
            reg.read("tokens", 64)

        if args.fault == "abort" and rank == args.fault_rank and step == args.fault_step:
            with torch.no_grad():
                s = sum(p.double().sum().item() for p in model.parameters())
            if not math.isfinite(s) or step > 0:
                os.abort()  # fail fast: leave a core for post-mortem instead of raising

        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

        if args.fault == "cpu" and rank == 0:
            with torch.no_grad():
                for _ in range(3):
                    model(x[:, :-1])

        # validation loss on the local shard (not all-reduced) for early stopping
        if args.fault == "exit3":
            with torch.no_grad():
                vl = model.module if distributed else model
                vlog = vl(val_x[:, :-1])
                vloss = F.cross_entropy(vlog.reshape(-1, vlog.shape[-1]), val_x[:, 1:].reshape(-1)).item()
            if rank == args.fault_rank:
                vloss += 0.05 * step  # this rank's held-out shard drifts (injected)
        else:
            vloss = loss.item()
        if vloss < best - 1e-3:
            best, bad = vloss, 0
        else:
            bad += 1
        if args.fault == "exit3" and bad > args.patience:
            info(f"early stopping at step {step}: val_loss did not improve for {bad} evals (best {best:.4f})")
            sys.exit(3)

        dt = time.time() - t0
        if args.log_style != "tqdm" or rank != 0:
            if rank == 0 or args.log_style == "logging":
                info(f"step {step:4d} | loss {loss.item():.4f} | grad_norm {gn.item():.3f} | "
                     f"lr {sched.get_last_lr()[0]:.2e} | {bs * seq / max(dt, 1e-6):.0f} tok/s")
        else:
            it.set_postfix(loss=f"{loss.item():.3f}")

        if args.ckpt_every and rank == 0 and (step + 1) % args.ckpt_every == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            state = {"model": (model.module if distributed else model).state_dict(),
                     "opt": opt.state_dict(), "step": step,
                     "rng": torch.get_rng_state(), "data_state": torch.randn(256, 1024)}
            path = os.path.join(args.ckpt_dir, "last.pt")
            torch.save(state, path + ".tmp")
            os.replace(path + ".tmp", path)
            info(f"saved checkpoint {path} (step {step})")
        time.sleep(args.step_sleep)

    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    info("training finished")


def main():
    args = parse()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args, args.spawn), nprocs=args.spawn, join=True)
    else:
        main_worker(int(os.environ.get("LOCAL_RANK", 0)), args)


if __name__ == "__main__":
    main()
