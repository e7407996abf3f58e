"""Tiny token-classifier trained with torch.compile (CPU, optional gloo DDP).

Fault flags select a real bug / misconfiguration on one rank at one step.
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--backend-compiler", default="inductor")
    p.add_argument("--compile-mode", default=None)
    p.add_argument("--fullgraph", action="store_true")
    p.add_argument("--dynamic", default="auto", choices=["auto", "true", "false"])
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--recompile-limit", type=int, default=None)
    p.add_argument("--fail-on-limit", action="store_true")
    p.add_argument("--out-style", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with this many procs")
    p.add_argument("--port", type=int, default=44960)
    p.add_argument("--dataset-size", type=int, default=200)
    p.add_argument("--suppress-errors", action="store_true", help="fall back to eager on compile errors")
    p.add_argument("--compile-inner", action="store_true", help="compile the module, then wrap in DDP")
    return p.parse_args()


class TinyTagger(nn.Module):
    def __init__(self, vocab=500, d=64, n_cls=8, fault="none", batch_size=16, debug_tokens=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ff1 = nn.Linear(d, 4 * d)
        self.ff2 = nn.Linear(4 * d, d)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_cls)
        self.fault = fault
        self.batch_size = batch_size
        self.debug_tokens = debug_tokens

    def forward(self, tokens, mask):
        h = self.emb(tokens)
        h = h + self.ff2(F.gelu(self.ff1(self.norm(h))))
        if self.fault == "item-trim":
            # trim padding to the longest real sequence in the batch
            longest = int(mask.sum(dim=1).max().item())
            h = h[:, :longest]
            mask = mask[:, :longest]
        if self.fault == "data-branch":
            # skip the residual scale if activations are already small
            if h.abs().mean() > 1.0:
                h = h / h.abs().mean()
        if self.fault == "print-debug" and self.debug_tokens:
            print("first tokens:", tokens[0, :8].tolist())
        pooled = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        if self.fault == "fixed-view":
            pooled = pooled.view(self.batch_size, -1)
        return self.head(pooled)


def make_batch(step, rank, args, fault_active):
    g = torch.Generator().manual_seed(1000 * rank + step)
    B, L = args.batch_size, args.seq_len
    if args.fault == "ragged" and fault_active:
        # collate without padding to a fixed length: the batch is only as long as its longest sample
        L = int(torch.randint(8, 64, (1,), generator=g))
    if args.fault == "fixed-view" and fault_active:
        B = args.dataset_size % args.batch_size or args.batch_size - 3  # last, incomplete batch
    tokens = torch.randint(0, 500, (B, L), generator=g)
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    mask = (torch.arange(L)[None, :] < lengths[:, None]).float()
    if args.fault == "f64-mask" and fault_active:
        import numpy as np
        mask = torch.from_numpy(np.asarray(mask.numpy(), dtype=np.float64))
    labels = torch.randint(0, 8, (B,), generator=g)
    return tokens, mask, labels


def main_worker(rank, world, args):
    if world > 1:
        if args.spawn:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    if args.out_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        def log(msg):
            print(f"[rank{rank}] {msg}" if world > 1 else msg, flush=True)

    if args.recompile_limit is not None:
        torch._dynamo.config.recompile_limit = args.recompile_limit
    if args.suppress_errors:
        torch._dynamo.config.suppress_errors = True
    if args.fail_on_limit:
        torch._dynamo.config.fail_on_recompile_limit_hit = True
    if args.fault == "simdlen" and rank == args.fault_rank:
        torch._inductor.config.cpp.simdlen = 384

    torch.manual_seed(0)
    model = TinyTagger(fault=args.fault if rank == args.fault_rank else "none",
                       batch_size=args.batch_size,
                       debug_tokens=(args.fault == "print-debug"))
    if args.fault in ("item-trim", "data-branch", "print-debug"):
        model.fault = args.fault  # architecture option is global in the config
    if world > 1 and not args.compile_inner:
        model = nn.parallel.DistributedDataParallel(model)
    dyn = {"auto": None, "true": True, "false": False}[args.dynamic]
    kw = dict(backend=args.backend_compiler, fullgraph=args.fullgraph, dynamic=dyn)
    if args.compile_mode:
        kw["mode"] = args.compile_mode
    log(f"torch {torch.__version__} world={world} compile({', '.join(f'{k}={v}' for k, v in kw.items())})")
    cmodel = torch.compile(model, **kw)
    if world > 1 and args.compile_inner:
        cmodel = nn.parallel.DistributedDataParallel(cmodel)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    it = range(1, args.steps + 1)
    if args.out_style == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank} train", disable=False, dynamic_ncols=False, ncols=90)
    t0 = time.time()
    for step in it:
        fault_active = (rank == args.fault_rank and step >= args.fault_step)
        tokens, mask, labels = make_batch(step, rank, args, fault_active)
        ts = time.time()
        logits = cmodel(tokens, mask)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        msg = f"step {step}/{args.steps} loss {loss.item():.4f} seq_len {tokens.shape[1]} step_time {time.time() - ts:.2f}s"
        if args.out_style == "tqdm":
            it.set_postfix(loss=f"{loss.item():.3f}")
            if step % 4 == 0:
                it.write(f"[rank{rank}] {msg}")
        else:
            log(msg)
    log(f"training done in {time.time() - t0:.1f}s")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main():
    args = get_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.spawn, args), nprocs=args.spawn, join=True)
    else:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
        main_worker(rank, world, args)


if __name__ == "__main__":
    main()
