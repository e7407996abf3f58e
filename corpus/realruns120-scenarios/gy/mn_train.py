"""Tiny multi-node DDP language-model training (gloo, CPU).

Faults are selected with --fault, applied on global rank --fault-rank at step --fault-step.
Meant to be launched by two torchrun agents (--nnodes 2) that simulate two hosts.
"""
import argparse
import fcntl
import logging
import os
import socket
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--out-dir", default="out/ckpt")
p.add_argument("--model-rev", type=int, default=1, help="model code revision deployed on this node")
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--pylogging", action="store_true")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--step-sleep", type=float, default=0.15)
p.add_argument("--metrics-rev", type=int, default=1, help="metrics code revision deployed on this node")
p.add_argument("--pid-dir", default="")
p.add_argument("--name-ckpt-by-config", action="store_true", help="rank 0 saves one file named after the full run config")
p.add_argument("--lock-file", default="data/shards/.index.lock")
args = p.parse_args()

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ.get("LOCAL_RANK", 0))
group_rank = int(os.environ.get("GROUP_RANK", 0))
host = socket.gethostname()

if args.pylogging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(0)
torch.set_num_threads(1)


class TinyLM(nn.Module):
    def __init__(self, vocab, d=64, rev=1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 128, batch_first=True, dropout=0.0)
                                     for _ in range(2 if rev == 1 else 3)])
        if rev >= 2:
            self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.rev = rev

    def forward(self, x):
        h = self.emb(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        if self.rev >= 2:
            h = self.ln_f(h)
        return self.head(h)


def load_shard(r):
    path = os.path.join(args.data_dir, f"train-{r:05d}-of-{world:05d}.npy")
    if args.fault == "sigbus":
        return path, np.load(path, mmap_mode="r")
    return path, np.load(path)


if args.pid_dir:
    os.makedirs(args.pid_dir, exist_ok=True)
    with open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
log(f"host={host} group_rank={group_rank} local_rank={local_rank} world_size={world} "
    f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
log(f"process group initialized: backend={dist.get_backend()} rank={dist.get_rank()}/{dist.get_world_size()}")

shard_path, tokens = load_shard(rank)
log(f"loaded shard {shard_path} with {tokens.shape[0]} sequences of length {tokens.shape[1]}")

model = TinyLM(args.vocab, rev=args.model_rev)
nparams = sum(p.numel() for p in model.parameters())
log(f"model TinyLM rev{args.model_rev}: {nparams/1e3:.1f}K parameters")
model = DDP(model, find_unused_parameters=(args.fault == "none-noisy"))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps + 1)
if args.fault == "none-noisy":
    # legacy code path: scheduler stepped once at setup (emits a torch warning)
    sched.step()

it = range(args.steps)
if args.use_tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", disable=False, mininterval=0.5, file=sys.stderr)

bs = 8
stats = {}
for step in it:
    i = (step * bs) % (tokens.shape[0] - bs)
    if args.fault == "sigbus" and rank == args.fault_rank and step == args.fault_step:
        # another job on this host rewrites the shard in place (truncate then re-write)
        with open(shard_path, "r+b") as f:
            f.truncate(128)
        i = tokens.shape[0] - bs - 1
    if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
        log(f"refreshing shard index (lock {args.lock_file})")
        with open(args.lock_file, "a") as lf:
            fcntl.flock(lf, fcntl.LOCK_EX)  # held by the data sync job on this host
            fcntl.flock(lf, fcntl.LOCK_UN)
        log("shard index refreshed")
    batch = torch.from_numpy(np.array(tokens[i:i + bs], dtype=np.int64))
    x, y = batch[:, :-1], batch[:, 1:]
    if args.fault == "none-amp":
        # config copied from the GPU cluster recipe: AMP on "cuda" (disabled with a warning on CPU hosts)
        if step == 0:
            scaler = torch.amp.GradScaler("cuda")
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(x)
    else:
        logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    if args.fault == "none-amp" and step % 5 == 0:
        # per-bucket token accuracy (buckets never seen in this batch give nan)
        pred = logits.argmax(-1).reshape(-1).numpy()
        tgt = y.reshape(-1).numpy()
        bucket = tgt * 8 // args.vocab
        hits = np.bincount(bucket, weights=(pred == tgt), minlength=16)
        cnt = np.bincount(bucket, minlength=16)
        acc = hits / cnt
        log(f"bucket acc (nan = empty bucket): {np.round(acc, 3).tolist()}")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if args.fault == "oom" and step == args.fault_step:
        # periodic "embedding similarity" diagnostic over the whole vocab x sequence batch
        emb = model.module.emb.weight.detach()
        feats = emb.repeat(38, 1)  # (vocab*160, d)
        sim = feats @ feats.T
        log(f"diag: similarity matrix {tuple(sim.shape)} mean={sim.mean().item():.4f}")
        del sim, feats
    # metrics across ranks
    if args.metrics_rev >= 2:
        m = torch.tensor([loss.item(), gn.item(), float(bs), float(x.numel()), 0.0])
    else:
        m = torch.tensor([loss.item(), gn.item(), float(bs), float(x.numel())])
    dist.all_reduce(m)
    if step % 5 == 0 or step == args.steps - 1:
        if rank == 0:
            stats["lr"] = sched.get_last_lr()[0]
        if args.fault == "keyerror" or rank == 0:
            msg = (f"step {step} loss {m[0].item()/world:.4f} grad_norm {m[1].item()/world:.3f} "
                   f"lr {stats['lr']:.2e} tokens {int(m[3].item())}")
            log(msg)
    if args.fault == "monitored" and step == args.fault_step:
        log("end of epoch 0: syncing ranks before evaluation")
        if rank == args.fault_rank:
            log(f"refreshing shard index for epoch 1 (lock {args.lock_file})")
            with open(args.lock_file, "a") as lf:
                fcntl.flock(lf, fcntl.LOCK_EX)  # held by the data sync job on this host
                fcntl.flock(lf, fcntl.LOCK_UN)
            log("shard index refreshed")
        dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
    if args.ckpt_every and (step + 1) % args.ckpt_every == 0:
        os.makedirs(args.out_dir, exist_ok=True)
        # every rank writes its own optimizer shard + rng state to node-local storage
        path = os.path.join(args.out_dir, f"step{step+1:05d}-rank{rank}.pt")
        if args.name_ckpt_by_config:
            run_name = ",".join(f"{k}={str(v).replace('/', '_')}" for k, v in sorted(vars(args).items()))
            path = os.path.join(args.out_dir, f"{run_name},world={world},step={step+1}.pt")
        if args.name_ckpt_by_config and rank != 0:
            path = None
        if path:
          with open(path, "wb") as f:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step + 1}, f)
          log(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.1f} MB)")
    time.sleep(args.step_sleep)
    if args.pid_dir:
        with open(os.path.join(args.pid_dir, f"rank{rank}.step"), "w") as f:
            f.write(str(step))

dist.barrier()
log("training complete")
dist.destroy_process_group()
