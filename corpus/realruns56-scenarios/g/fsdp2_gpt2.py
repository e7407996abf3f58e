#!/usr/bin/env python
"""FSDP2 (fully_shard) pre-training of a tiny GPT-2 built from a config (no download).

--loss chunked : memory-saving chunked cross-entropy that projects the final hidden
                 states with the (tied) embedding matrix outside the model's forward.
"""
import argparse
import logging
import math
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
from transformers import GPT2Config, GPT2LMHeadModel

logger = logging.getLogger("fsdp2_pretrain")


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--loss", choices=["standard", "chunked"], default="standard")
    p.add_argument("--chunked-from", type=int, default=1, help="switch to chunked loss from this step")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=10)
    return p.parse_args()


def chunked_ce(hidden, emb_weight, labels, chunk=64):
    hidden = hidden[:, :-1].reshape(-1, hidden.shape[-1])
    labels = labels[:, 1:].reshape(-1)
    total = 0.0
    for i in range(0, hidden.shape[0], chunk):
        logits = hidden[i:i + chunk] @ emb_weight.t()
        total = total + F.cross_entropy(logits.float(), labels[i:i + chunk], reduction="sum")
    return total / labels.numel()


def main():
    args = get_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING,
                        format=f"%(asctime)s - %(levelname)s - %(name)s - [rank {rank}] %(message)s")
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=args.seq_len)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    nparams = sum(p.numel() for p in model.parameters())
    logger.info("model: GPT2 n_layer=%d n_embd=%d params=%.2fM world_size=%d", cfg.n_layer, cfg.n_embd, nparams / 1e6, world)
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    logger.info("applied fully_shard to %d blocks + root", len(model.transformer.h))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        ids = torch.randint(0, cfg.vocab_size, (args.batch_size, args.seq_len), generator=g)
        if args.loss == "chunked" and step >= args.chunked_from:
            out = model.transformer(input_ids=ids)
            loss = chunked_ce(out.last_hidden_state, model.transformer.wte.weight, ids)
        else:
            out = model(input_ids=ids, labels=ids)
            loss = out.loss
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if gnorm.full_tensor().item() > args.clip if hasattr(gnorm, "full_tensor") else gnorm.item() > args.clip:
            logger.warning("step %d: grad norm %.2f > clip %.1f, gradients clipped", step, float(gnorm.full_tensor() if hasattr(gnorm, "full_tensor") else gnorm), args.clip)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 5 == 0:
            l = loss.detach().clone()
            dist.all_reduce(l)
            l /= world
            tps = step * args.batch_size * args.seq_len * world / (time.time() - t0)
            logger.info("step %d | loss %.4f | ppl %.1f | lr %.2e | tok/s %.0f", step, l.item(), math.exp(l.item()), sched.get_last_lr()[0], tps)
    logger.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
