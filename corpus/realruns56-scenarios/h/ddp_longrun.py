"""Long-ish DDP training run (gloo, CPU) with switchable late faults.

Faults are induced the way they happen in real jobs: native crashes via ctypes,
resource limits via setrlimit, checkpoint dirs on full / read-only mounts,
ranks stuck waiting on a lock or spinning on a retry loop, external kills
(a marker file with the pid is written so a shell can kill the process).
"""
import argparse
import ctypes
import json
import logging
import math
import os
import resource
import shutil
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--model", choices=["mlp", "gpt2"], default="mlp")
p.add_argument("--fmt", choices=["pipe", "hf", "tqdm", "logging"], default="pipe")
p.add_argument("--fault", default="none",
               choices=["none", "segv", "abort", "rlimit_as", "stuck_lock", "spin_retry",
                        "rotate_bug", "marker", "eval_oom", "stuck_before_ckpt"])
p.add_argument("--fault-first-attempt-only", action="store_true")
p.add_argument("--save-retries", type=int, default=0)
p.add_argument("--save-fileobj", action="store_true")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=300)
p.add_argument("--marker-dir", default="/work/rr56/h/tmp")
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--ckpt-every", type=int, default=100)
p.add_argument("--ckpt-tmp", default=None, help="write to tmp dir then os.rename into ckpt-dir")
p.add_argument("--ckpt-pad-mb", type=int, default=0, help="extra optimizer-ish buffer saved with ckpt")
p.add_argument("--barrier", choices=["none", "plain", "monitored"], default="none")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--resume", action="store_true")
p.add_argument("--handle-usr1", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--as-limit-mb", type=int, default=0)
p.add_argument("--skip-nonfinite", action="store_true")
p.add_argument("--standalone", action="store_true", help="single process, no process group")
args = p.parse_args()
if args.fault_first_attempt_only and int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
    args.fault = "none"

if args.standalone:
    rank, world, local_rank = 0, 1, 0
else:
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))

log = None
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")


def out(msg):
    if log is not None:
        log.info(msg)
    else:
        print(msg, flush=True)


def warn(msg):
    if log is not None:
        log.warning(msg)
    else:
        print(f"WARNING: {msg}", flush=True)


torch.manual_seed(1234 + rank)
torch.set_num_threads(1)

if not args.standalone:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))

if args.model == "gpt2":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=2048, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    VOCAB = cfg.vocab_size
else:
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 1))
    VOCAB = None

ddp = model if args.standalone else DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
nparams = sum(p.numel() for p in model.parameters())
if rank == 0:
    out(f"model={args.model} params={nparams} world_size={world} steps={args.steps} ckpt_dir={args.ckpt_dir}")

start_step = 0
if args.resume and args.ckpt_dir:
    latest = os.path.join(args.ckpt_dir, "latest.pt")
    if os.path.exists(latest):
        st = torch.load(latest, map_location="cpu")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        start_step = st["step"]
        out(f"[rank{rank}] resumed from {latest} at step {start_step}")
    else:
        out(f"[rank{rank}] no checkpoint at {latest}, starting fresh")


def marker(tag):
    os.makedirs(args.marker_dir, exist_ok=True)
    path = os.path.join(args.marker_dir, f"{tag}.rank{rank}")
    with open(path, "w") as f:
        f.write(str(os.getpid()))


if args.as_limit_mb and rank == args.fault_rank:
    lim = args.as_limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    out(f"[rank{rank}] RLIMIT_AS set to {args.as_limit_mb} MiB (cluster per-task vmem cap)")

if args.handle_usr1:
    pending = {"sig": None}

    def _h(signum, frame):
        pending["sig"] = signum
    signal.signal(signal.SIGUSR1, _h)
    marker("usr1ready")


def batch(step):
    g = torch.Generator().manual_seed(step * 97 + rank)
    if VOCAB:
        ids = torch.randint(0, VOCAB, (8, 32), generator=g)
        return ids, ids
    x = torch.randn(16, 32, generator=g)
    y = x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(16, 1, generator=g)
    return x, y


def save_ckpt(step):
    for attempt in range(args.save_retries + 1):
        try:
            return _save_ckpt(step)
        except (OSError, RuntimeError) as e:
            if attempt == args.save_retries:
                raise
            logging.getLogger("trainer.ckpt").exception(
                f"[rank{rank}] checkpoint save failed (attempt {attempt + 1}/{args.save_retries + 1}); pruning old checkpoints and retrying")
            olds = sorted((f for f in os.listdir(args.ckpt_dir) if f.startswith("step")),
                          key=lambda n: int(n[4:].split(".")[0]))
            for f in olds[:-1]:
                os.remove(os.path.join(args.ckpt_dir, f))
                warn(f"[rank{rank}] removed old checkpoint {f}")
            time.sleep(1)


def _save_ckpt(step):
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
    if args.ckpt_pad_mb:
        state["ema_buffer"] = torch.zeros(args.ckpt_pad_mb * 1024 * 1024 // 4)
    if args.ckpt_tmp:
        os.makedirs(args.ckpt_tmp, exist_ok=True)
        tmp = os.path.join(args.ckpt_tmp, f"step{step}.pt.tmp")
        torch.save(state, tmp)
        os.rename(tmp, os.path.join(args.ckpt_dir, f"step{step}.pt"))
    else:
        path = os.path.join(args.ckpt_dir, f"step{step}.pt")
        if args.save_fileobj:
            with open(path, "wb") as fh:
                torch.save(state, fh)
        else:
            torch.save(state, path)
        shutil.copyfile(path, os.path.join(args.ckpt_dir, "latest.pt"))
    out(f"[rank{rank}] saved checkpoint step={step} -> {args.ckpt_dir}")


if args.ckpt_dir and rank == 0:
    os.makedirs(args.ckpt_dir, exist_ok=True)

pbar = None
if args.fmt == "tqdm":
    from tqdm import tqdm
    pbar = tqdm(total=args.steps, initial=start_step, desc=f"train[r{rank}]", dynamic_ncols=False, ncols=100,
                mininterval=0.0, file=sys.stderr)

t0 = time.time()
ema = None
for step in range(start_step, args.steps):
    if step == args.fault_step and rank == args.fault_rank:
        if args.fault == "segv":
            # buggy native post-processing: reads through a dangling pointer
            ctypes.string_at(0)
        elif args.fault == "abort":
            libc = ctypes.CDLL("libc.so.6")
            libc.abort()
        elif args.fault == "marker":
            marker(f"step{step}")
            time.sleep(30)
        elif args.fault == "stuck_lock":
            lock = os.path.join(args.marker_dir, "shard_cache.lock")
            os.makedirs(args.marker_dir, exist_ok=True)
            open(lock, "a").close()
            warn(f"[rank{rank}] shard cache lock {lock} held by another process, waiting...")
            while os.path.exists(lock):
                time.sleep(1.0)
        elif args.fault == "spin_retry":
            tries = 0
            # retry until the (never arriving) next shard becomes readable
            while not os.path.exists(os.path.join(args.marker_dir, "shard_00042.ready")):
                tries += 1
        elif args.fault == "rotate_bug":
            # intended: remove the oldest checkpoint file; actually removes the whole directory
            old = os.path.join(args.ckpt_dir, f"step{step - 2 * args.ckpt_every}.pt")
            shutil.rmtree(os.path.dirname(old), ignore_errors=True)
            out(f"[rank{rank}] rotated old checkpoint {old}")
        elif args.fault == "eval_oom":
            pass
    x, y = batch(step)
    if VOCAB:
        outp = ddp(input_ids=x, labels=y)
        loss = outp.loss
    else:
        loss = nn.functional.mse_loss(ddp(x), y)
    if args.skip_nonfinite and step % 173 == 91:
        loss = loss * float("inf")
    if args.skip_nonfinite and not torch.isfinite(loss):
        warn(f"[rank{rank}] step {step}: non-finite loss {loss.item()}, skipping batch (grads zeroed)")
        opt.zero_grad(set_to_none=True)
        # keep DDP collectives aligned: run a zero-weighted backward
        (loss.detach().nan_to_num(0.0, 0.0, 0.0) * 0 + 0 * sum(p.sum() for p in ddp.parameters())).backward()
        opt.zero_grad(set_to_none=True)
        continue
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step()
    sched.step()
    lv = loss.item()
    ema = lv if ema is None else 0.98 * ema + 0.02 * lv
    lr = sched.get_last_lr()[0]
    if args.fmt == "pipe":
        out(f"[rank{rank}] step {step} | loss {lv:.4f} | lr {lr:.3e} | grad_norm {gn:.3f} | {(time.time()-t0)/(step-start_step+1)*1000:.1f} ms/it")
    elif args.fmt == "hf":
        if rank == 0:
            out(json.dumps({"loss": round(lv, 4), "grad_norm": round(float(gn), 4), "learning_rate": lr,
                            "epoch": round(step / 100, 2)}).replace('"', "'"))
    elif args.fmt == "logging":
        out(f"step={step} loss={lv:.4f} ema_loss={ema:.4f} lr={lr:.2e} grad_norm={gn:.3f}")
    elif pbar is not None:
        pbar.set_postfix(loss=f"{lv:.4f}", lr=f"{lr:.2e}")
        pbar.update(1)
    if args.step_sleep:
        time.sleep(args.step_sleep)
    if args.handle_usr1 and pending["sig"] is not None:
        warn(f"[rank{rank}] received signal {signal.Signals(pending['sig']).name} at step {step}; writing emergency checkpoint and continuing")
        pending["sig"] = None
        if args.ckpt_dir:
            save_ckpt(step + 1)
    if args.fault == "eval_oom" and rank == args.fault_rank and step == args.fault_step:
        # evaluation on rank fault_rank: collects full-vocab logits for a big eval set at once
        out(f"[rank{rank}] running eval on 65536 sequences...")
        with torch.no_grad():
            logits_all = torch.empty(65536, 32, VOCAB or 2048)
            out(f"[rank{rank}] eval buffer {logits_all.shape}")
    if args.ckpt_dir and (step + 1) % args.ckpt_every == 0:
        if args.fault == "stuck_before_ckpt" and rank == args.fault_rank and step + 1 >= args.fault_step:
            lock = os.path.join(args.marker_dir, "ckpt_staging.lock")
            os.makedirs(args.marker_dir, exist_ok=True)
            open(lock, "a").close()
            warn(f"[rank{rank}] flushing local shard: staging lock {lock} is held, waiting for it to be released")
            while os.path.exists(lock):
                time.sleep(1.0)
        if args.barrier == "monitored":
            dist.monitored_barrier(timeout=timedelta(seconds=20))
        elif args.barrier == "plain":
            dist.barrier()
        if rank == 0:
            save_ckpt(step + 1)
        if not args.standalone:
            dist.barrier()

if pbar is not None:
    pbar.close()
if rank == 0:
    out(f"training finished: {args.steps} steps, final ema loss {ema:.4f}, {time.time()-t0:.1f}s")
if not args.standalone:
    dist.destroy_process_group()
