"""Plain PyTorch DDP training loop for a tiny token classifier / regressor.

Flags select the fault, the rank it happens on and the step.
"""
import argparse
import glob
import json
import logging
import math
import os
import sys
import time
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
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm", "rich"])
p.add_argument("--data-dir", default="/work/rr70/bf/data/shards")
p.add_argument("--out-dir", default="/work/rr70/bf/runs/ddp")
p.add_argument("--resume", default=None)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--vocab", type=int, default=500)
p.add_argument("--d-model", type=int, default=64)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--seq-len", type=int, default=16)
p.add_argument("--config", default=None)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--param-groups", default="single", choices=["single", "split"])
p.add_argument("--ckpt-args", default="dict", choices=["dict", "namespace"])
args = p.parse_args()

if args.config:
    with open(args.config) as f:
        cfg = json.load(f)
    for k, v in cfg.items():
        setattr(args, k.replace("-", "_"), v)

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))

if args.log_style == "logging":
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
    )
log = logging.getLogger("train")


def say(msg):
    if args.log_style == "logging":
        log.info(msg)
    elif args.log_style == "rich":
        from rich.console import Console
        Console(stderr=False).log(f"[rank {rank}] {msg}")
    else:
        print(f"[rank {rank}] {msg}", flush=True)


class TokenShards(Dataset):
    """Sequences of token ids stored as .npy shards, next-token label = last token class."""

    def __init__(self, root, seq_len, vocab, fault=None, fault_rank=0):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.seq_len = seq_len
        self.vocab = vocab
        self.fault = fault
        self.open_handles = []
        self.labels = {i: int(i % 7) for i in range(len(self.files))}
        if fault == "worker_error" and rank == fault_rank:
            # label map rebuilt from a csv that skipped the header row -> ids shifted by one
            self.labels = {i + 1: int(i % 7) for i in range(len(self.files) - 1)}

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = self.files[i]
        if self.fault == "too_many_files":
            fh = open(path, "rb")  # keep handles around for "fast re-reads"
            self.open_handles.append(fh)
            arr = np.load(fh)
            fh.seek(0)
        else:
            arr = np.load(path)
        if self.fault == "shape":
            arr = np.pad(arr, (0, self.seq_len - len(arr)))  # data config says max_len=20
        if self.fault == "collate":
            # trim padding per sample: lengths now differ
            arr = arr[arr != 0] if (arr != 0).any() else arr
        else:
            arr = arr[: self.seq_len]
        x = torch.from_numpy(arr.astype(np.int64))
        if self.fault == "dtype":
            feats = torch.from_numpy(np.log1p(arr.astype(np.float64)))  # float64 features
        else:
            feats = torch.log1p(x.float())
        y = self.labels[i]
        return {"ids": x, "feats": feats, "label": y}


class Model(nn.Module):
    def __init__(self, vocab, d, seq_len, n_classes=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.proj = nn.Linear(seq_len, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.head = nn.Linear(d, n_classes)

    def forward(self, ids, feats):
        h = self.emb(ids).mean(1) + self.proj(feats)
        h = h + self.mlp(h)
        return self.head(h)


def make_data(root, n=96, seq_len=16, vocab=500):
    if rank == 0 and not glob.glob(os.path.join(root, "*.npy")):
        os.makedirs(root, exist_ok=True)
        rng = np.random.default_rng(0)
        for i in range(n):
            L = rng.integers(seq_len // 2, seq_len + 1)
            a = np.zeros(seq_len, dtype=np.int32)
            a[:L] = rng.integers(1, vocab, size=L)
            np.save(os.path.join(root, f"sample_{i:05d}.npy"), a)


def main():
    distributed = "RANK" in os.environ or args.fault == "no_launcher"
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    say(f"world_size={world} torch={torch.__version__} fault={args.fault}")
    torch.manual_seed(0)
    make_data(args.data_dir, seq_len=args.seq_len, vocab=args.vocab)
    if distributed:
        dist.barrier()

    vocab = args.vocab
    if args.fault == "embedding_oob":
        # model vocab taken from a stale config (tokenizer grew to 500 ids)
        vocab = 320
    seq_len = args.seq_len
    ds = TokenShards(args.data_dir, seq_len, args.vocab, fault=args.fault if rank == args.fault_rank or args.fault in ("collate",) else None,
                     fault_rank=args.fault_rank)
    if args.fault == "shape" and rank == args.fault_rank:
        ds.seq_len = seq_len + 4  # this rank read seq_len from the data config, model from the model config
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.workers, drop_last=True,
                    persistent_workers=args.workers > 0)
    model = Model(vocab, args.d_model, seq_len)
    start_step = 0
    if args.param_groups == "split":
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "emb" not in n]
        no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "emb" not in n)]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    if args.resume:
        say(f"resuming from {args.resume}")
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start_step = ckpt["step"]
        say(f"resumed at step {start_step}")
    ddp = DDP(model) if distributed else model
    say(f"params={sum(p.numel() for p in model.parameters())} batches/epoch={len(dl)}")

    step = start_step
    t0 = time.time()
    it = None
    pbar = None
    if args.log_style == "tqdm":
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, initial=start_step, desc=f"rank{rank}", position=rank, dynamic_ncols=False, ncols=100)
    epoch = 0
    while step < args.steps:
        if sampler is not None:
            sampler.set_epoch(epoch)
        for batch in dl:
            if step >= args.steps:
                break
            ids, feats, y = batch["ids"], batch["feats"], batch["label"]
            if args.fault == "loss_target" and rank == args.fault_rank and step == args.fault_step:
                # switched to one-hot labels for label smoothing but kept integer dtype
                y = F.one_hot(y, 7)
            logits = ddp(ids, feats)
            loss = F.cross_entropy(logits, y)
            if args.fault == "inplace" and rank == args.fault_rank and step >= args.fault_step:
                # "confidence penalty" added late in the run
                probs = logits.softmax(-1)
                ent = -(probs * probs.log()).sum(-1)
                probs.clamp_(min=1e-6)
                loss = loss - 0.01 * ent.mean()
            if args.fault == "backward_twice" and rank == args.fault_rank and step >= args.fault_step:
                # running logit-norm regulariser, accumulated across steps (never detached)
                reg = logits.pow(2).mean() if step == args.fault_step else 0.9 * reg + 0.1 * logits.pow(2).mean()
                loss = loss + 0.01 * reg
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if pbar is not None:
                pbar.update(1)
                pbar.set_postfix(loss=f"{loss.item():.4f}", gnorm=f"{gn.item():.2f}")
            elif step % 2 == 0:
                say(f"step {step}/{args.steps} loss={loss.item():.4f} grad_norm={gn.item():.3f} lr=3.0e-03 {(time.time()-t0)/step:.3f}s/it")
            if args.fault == "sigint_wait" and step == args.fault_step:
                time.sleep(60)
            if args.fault == "cpu_oom" and rank == args.fault_rank and step == args.fault_step:
                # eval: cache all pairwise embedding similarities for retrieval metrics
                say("building retrieval index for eval")
                n = 60000
                emb = torch.randn(n, args.d_model)
                sims = emb @ emb.T
                say(f"sims {tuple(sims.shape)}")
            if args.fault == "module_attr" and rank == args.fault_rank and step == args.fault_step:
                say("running eval")
                with torch.no_grad():
                    n_cls = ddp.head.out_features
            if args.save_every and step % args.save_every == 0:
                save(model, opt, step)
        epoch += 1
    if pbar is not None:
        pbar.close()
    if args.fault == "save_end":
        save(model, opt, step)
    say(f"done: {step} steps in {time.time()-t0:.1f}s final_loss={loss.item():.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


def save(model, opt, step):
    if rank != 0:
        return
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, f"ckpt_step{step}.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                "args": args if args.ckpt_args == "namespace" else vars(args)}, path)
    say(f"saved checkpoint {path}")


if __name__ == "__main__":
    main()
