#!/usr/bin/env python
"""Tiny GPT-2 language-model pretraining under DDP (gloo, CPU).

Scenario family "ddp_lm": a long multi-rank run that prints per-step metrics.
Flags select an (optional) fault, the rank that hits it, and the step.

Faults (each reproduces the real mistake, not a hand-raised exception):
  none            healthy run
  special-token   model vocab built from tokenizer.vocab_size (ignores added special tokens);
                  the fault rank's shard contains the <|sep|> token -> embedding index out of range
  ragged-shard    the fault rank's shard has one record truncated; default_collate gets unequal lengths
  bad-record      a record in the fault rank's jsonl shard lacks the "ids" key (KeyError in worker)
  missing-shard   the fault rank's shard file was never written (data prep stopped early)
  metrics-key     rank logs eval metrics with a key that only exists on some steps (KeyError)
  aux-head        auxiliary head only used when the batch has doc boundaries -> DDP unused params
  width           fault rank reads the model width from a stale config -> DDP model mismatch
  hist-allreduce  token histogram sized by the local max token id -> collective size mismatch
  fd-leak         dataset keeps every shard file open (fd leak) -> EMFILE under ulimit -n
  eval-big        full-vocab eval with a huge batch on rank 0 -> host allocation refused under ulimit -v
  sparse-adam     nn.Embedding(sparse=True) combined with AdamW
  onecycle        OneCycleLR total_steps computed from the wrong dataloader length
  stale-lock      the fault rank's cache dir holds a stale .lock file -> monitored_barrier names it
  len-off-by-one  Dataset.__len__ counts newlines + 1 -> IndexError in a DataLoader worker
Other knobs used by cases: --ckpt-every/--out-dir (checkpoint dir on a tiny tmpfs, immutable dir),
--dump-preds (pickle eval logits; ulimit -f), --baseline (rank 0 loads a previous checkpoint at
--fault-step; checkpoints built by make_ckpts.py), --pid-file (used to kill a rank/worker/launcher
from outside). Note: options were added while cases were being produced; older logs show older line numbers.
"""
import argparse
import json
import logging
import math
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
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=120)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data-dir", default="/work/rr80/ci/data/lm")
p.add_argument("--out-dir", default="/work/rr80/ci/out/lm")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--log-style", choices=["print", "logging"], default="print")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--log-every", type=int, default=1)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--noisy", action="store_true", help="emit the usual library warnings")
p.add_argument("--pid-file", default="")
p.add_argument("--baseline", default="", help="checkpoint of the previous best run, evaluated by rank 0 at --fault-step")
p.add_argument("--dump-preds", action="store_true", help="save eval logits next to each checkpoint")
p.add_argument("--cache-dir", default="/work/rr80/ci/cache/lm")
args = p.parse_args()

# ---------------------------------------------------------------- tokenizer (local)
BASE_VOCAB = 500
SPECIAL = ["<|pad|>", "<|bos|>", "<|eos|>", "<|sep|>"]


class TinyTokenizer:
    """Byte-ish tokenizer with 500 base ids and 4 added special tokens."""

    def __init__(self):
        self.vocab_size = BASE_VOCAB  # like HF: excludes added tokens
        self.added = {t: BASE_VOCAB + i for i, t in enumerate(SPECIAL)}

    def __len__(self):
        return self.vocab_size + len(self.added)


# ---------------------------------------------------------------- setup
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
torch.set_num_threads(1)

if args.log_style == "logging":
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    log = logging.getLogger("train").info
    warn = logging.getLogger("train").warning
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

    def warn(msg):
        print(f"[rank{rank}] WARNING: {msg}", flush=True)

if args.pid_file:
    with open(f"{args.pid_file}.{rank}", "w") as f:
        f.write(str(os.getpid()))

tok = TinyTokenizer()


# ---------------------------------------------------------------- data prep (rank 0 writes shards)
def prepare_shards():
    os.makedirs(args.data_dir, exist_ok=True)
    rng = np.random.default_rng(1234)
    n_shards = world
    for s in range(n_shards):
        path = os.path.join(args.data_dir, f"shard_{s:05d}.jsonl")
        if args.fault == "missing-shard" and s == args.fault_rank:
            # data prep crashed before writing this shard in the original pipeline
            if os.path.exists(path):
                os.remove(path)
            continue
        with open(path, "w") as f:
            for i in range(args.steps * args.batch + 64):
                ids = rng.integers(0, BASE_VOCAB, size=args.seq + 1).tolist()
                rec = {"ids": ids, "doc": f"doc-{s}-{i}"}
                if args.fault == "special-token" and s == args.fault_rank and i == args.fault_step * args.batch + 3:
                    ids[7] = tok.added["<|sep|>"]  # document separator inserted by the packer
                if args.fault == "ragged-shard" and s == args.fault_rank and i == args.fault_step * args.batch + 5:
                    rec["ids"] = ids[: args.seq - 9]  # last write of the packer was cut short
                line = json.dumps(rec)
                if args.fault == "bad-record" and s == args.fault_rank and i == args.fault_step * args.batch + 2:
                    line = line[:57]  # partial write from a crashed packer, never repaired
                f.write(line + "\n")
    if args.fault == "fd-leak":
        # many small shards: one file per 8 sequences
        sub = os.path.join(args.data_dir, "small")
        os.makedirs(sub, exist_ok=True)
        for s in range(world):
            for j in range(args.steps + 8):
                with open(os.path.join(sub, f"r{s}_{j:05d}.npy"), "wb") as f:
                    np.save(f, rng.integers(0, BASE_VOCAB, size=(args.batch, args.seq + 1)))


if rank == 0:
    prepare_shards()
dist.barrier()


def build_token_cache():
    """Per-rank token-count cache, guarded by a lock file (NFS-safe 'mkdir/O_EXCL' lock)."""
    cdir = os.path.join(args.cache_dir, f"rank{rank}")
    os.makedirs(cdir, exist_ok=True)
    lock = os.path.join(cdir, ".lock")
    if args.fault == "stale-lock" and rank == args.fault_rank:
        # left behind by a previous job that was scancel'ed while it held the lock
        with open(lock, "w") as f:
            f.write("pid=41377 host=node-07\n")
    waited = 0
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, f"pid={os.getpid()}\n".encode())
            os.close(fd)
            break
        except FileExistsError:
            if waited % 10 == 0:
                log(f"waiting for cache lock {lock} ...")
            time.sleep(1)
            waited += 1
    counts = np.zeros(BASE_VOCAB, dtype=np.int64)
    with open(os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl")) as f:
        for line in f:
            counts += np.bincount(json.loads(line)["ids"], minlength=BASE_VOCAB)[:BASE_VOCAB]
    np.save(os.path.join(cdir, "counts.npy"), counts)
    os.remove(lock)
    log(f"token cache ready: {int(counts.sum())} tokens")


if args.fault == "stale-lock" or args.cache_dir != p.get_default("cache_dir"):
    build_token_cache()
    # make sure every rank has its cache before training (names the rank that is missing)
    dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)


class JsonlShard(Dataset):
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.lines = f.readlines()

    def __len__(self):
        if args.fault == "len-off-by-one":
            # counts records as newlines + 1 (assumes no trailing newline, but the writer always adds one)
            return sum(1 for _ in open(self.path).read().split("\n"))
        return len(self.lines)

    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        ids = torch.tensor(rec["ids"], dtype=torch.long)
        return ids[:-1], ids[1:]


class NpyFiles(Dataset):
    """One .npy file per batch; keeps handles open for 'fast re-reads' (fd leak)."""

    def __init__(self, folder, prefix):
        self.files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.startswith(prefix))
        self.handles = {}

    def __len__(self):
        return len(self.files) * args.batch

    def __getitem__(self, i):
        path = self.files[i // args.batch]
        if path not in self.handles:
            self.handles[path] = open(path, "rb")
        fh = self.handles[path]
        fh.seek(0)
        arr = np.load(fh)
        ids = torch.from_numpy(arr[i % args.batch].astype(np.int64))
        return ids[:-1], ids[1:]


if args.fault == "fd-leak":
    ds = NpyFiles(os.path.join(args.data_dir, "small"), f"r{rank}_")
    sampler = None
    shuffle = False
elif args.fault == "len-off-by-one":
    shard = os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl")
    log(f"loading shard {shard}")
    ds = JsonlShard(shard)
    sampler = None
    shuffle = True
else:
    shard = os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl")
    log(f"loading shard {shard}")
    ds = JsonlShard(shard)
    sampler = None
    shuffle = False

loader = DataLoader(ds, batch_size=args.batch, shuffle=shuffle, sampler=sampler,
                    num_workers=args.workers, drop_last=True,
                    persistent_workers=args.workers > 0)
log(f"dataset: {len(ds)} sequences, {len(loader)} batches/epoch, workers={args.workers}")

# ---------------------------------------------------------------- model
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_warning()

n_embd = 64
if args.fault == "width" and rank == args.fault_rank:
    # this node still had the previous experiment's config.json cached
    n_embd = 96
cfg = GPT2Config(vocab_size=tok.vocab_size, n_positions=64, n_embd=n_embd, n_layer=2, n_head=4,
                 resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = GPT2LMHeadModel(cfg)
        self.aux = nn.Linear(n_embd, 2)  # doc-boundary predictor

    def forward(self, x, y, use_aux=True):
        out = self.gpt(input_ids=x, labels=y, output_hidden_states=use_aux)
        loss = out.loss
        if use_aux:
            h = out.hidden_states[-1]
            aux_logits = self.aux(h[:, -1])
            loss = loss + 0.1 * F.cross_entropy(aux_logits, torch.zeros(x.size(0), dtype=torch.long))
        return loss, out.logits


if args.fault == "sparse-adam":
    class SparseLM(LM):
        def __init__(self):
            super().__init__()
            self.extra_emb = nn.Embedding(tok.vocab_size, n_embd, sparse=True)  # "saves memory"

        def forward(self, x, y, use_aux=True):
            loss, logits = super().forward(x, y, use_aux)
            return loss + 1e-3 * self.extra_emb(x).pow(2).mean(), logits
    model = SparseLM()
else:
    model = LM()
nparams = sum(p.numel() for p in model.parameters())
log(f"model: GPT2 n_layer=2 n_embd={n_embd} vocab={cfg.vocab_size} params={nparams/1e6:.2f}M")

ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4, weight_decay=0.1)
if args.fault == "onecycle":
    # total_steps from the *global* dataset size / global batch, but each rank iterates its own shard
    total = (len(ds) * 1) // (args.batch * world) * args.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=total)
    log(f"OneCycleLR total_steps={total}")
else:
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

if args.noisy:
    # common sloppy order in user code: warm-up scheduler step before the first optimizer.step()
    sched.step()

if args.tqdm and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps * args.epochs, desc="train", dynamic_ncols=False, ncols=100, mininterval=0.5)
else:
    bar = None

# ---------------------------------------------------------------- train
step = 0
t0 = time.time()
tokens = 0
ema = None
for epoch in range(args.epochs):
    for x, y in loader:
        if step >= args.steps * (epoch + 1):
            break
        use_aux = True
        if args.fault == "aux-head":
            # aux loss only when the batch contains a document boundary (eos) - none on the fault rank's data
            use_aux = not (rank == args.fault_rank and step >= args.fault_step)
        loss, logits = ddp(x, y, use_aux=use_aux)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += x.numel()
        lv = loss.item()
        ema = lv if ema is None else 0.95 * ema + 0.05 * lv

        if args.fault == "hist-allreduce" and step % 25 == 0 and step > 0:
            # token-usage histogram for logging; sized by the max id seen locally
            hist = torch.bincount(x.flatten())
            dist.all_reduce(hist)
            log(f"step {step} token histogram: {int((hist > 0).sum())} distinct ids in use")

        if args.fault == "eval-big" and rank == 0 and step == args.fault_step:
            log(f"step {step} running full-vocab eval on held-out set")
            with torch.no_grad():
                big = torch.randint(0, tok.vocab_size, (4096, 64))
                probs = torch.empty(big.size(0), big.size(1), 4096 * 16)  # per-token top-k buffer
                log(f"eval buffer {tuple(probs.shape)}")

        if args.baseline and rank == 0 and step == args.fault_step:
            log(f"step {step}: comparing against baseline {args.baseline}")
            ckpt = torch.load(args.baseline, map_location="cpu")
            ref = LM()
            ref.load_state_dict(ckpt["model"] if "model" in ckpt else ckpt)
            with torch.no_grad():
                ref_loss, _ = ref(x, y)
            log(f"step {step}: baseline loss {ref_loss.item():.4f} vs current {loss.item():.4f}")
        if args.baseline:
            dist.barrier()  # keep ranks in lock-step around the comparison eval
        if step % args.log_every == 0:
            lr = sched.get_last_lr()[0]
            el = time.time() - t0
            log(f"epoch {epoch} step {step:4d}/{args.steps} loss {lv:.4f} ema {ema:.4f} "
                f"grad_norm {gn:.3f} lr {lr:.2e} tok/s {tokens / max(el, 1e-6):.0f}")
        if args.fault == "metrics-key" and rank == args.fault_rank and step == args.fault_step:
            metrics = {"loss": lv, "lr": sched.get_last_lr()[0]}
            if step % 500 == 0:
                metrics["eval_ppl"] = math.exp(ema)
            log(f"eval: ppl={metrics['eval_ppl']:.2f} loss={metrics['loss']:.4f}")
        if args.ckpt_every and step > 0 and step % args.ckpt_every == 0:
            if rank == 0:
                os.makedirs(args.out_dir, exist_ok=True)
                if args.dump_preds:
                    pp = os.path.join(args.out_dir, f"preds_{step:06d}.pkl")
                    with open(pp, "wb") as f:
                        pickle.dump({"step": step, "logits": logits.detach().float().numpy(),
                                     "input_ids": x.numpy()}, f)
                    log(f"dumped eval logits to {pp}")
                path = os.path.join(args.out_dir, f"step_{step:06d}.pt")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                log(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.1f} MB)")
            dist.barrier()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{lv:.3f}")
        step += 1

if bar is not None:
    bar.close()
dist.barrier()
log(f"training done: {step} steps in {time.time() - t0:.1f}s, final ema loss {ema:.4f}")
if rank == 0:
    os.makedirs(args.out_dir, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final.pt"))
    log(f"saved {os.path.join(args.out_dir, 'final.pt')}")
dist.destroy_process_group()
