#!/usr/bin/env python
"""Small data-parallel classifier trainer used to reproduce numerics problems in long runs.

Launch with torchrun (env://) or with --spawn N (torch.multiprocessing.spawn) or as a single process.
Faults (--fault) are injected the way they happen in practice (bad records, bad config values, ...).
"""
import argparse
import datetime
import logging
import math
import os
import socket
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=80)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--opt", default="adam", choices=["adam", "adamw", "sgd"])
p.add_argument("--eps", type=float, default=1e-8)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--sched", default="cosine", choices=["cosine", "onecycle", "none"])
p.add_argument("--sched-total", type=int, default=0, help="total steps given to the scheduler (0 = --steps)")
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--clip-error-if-nonfinite", action="store_true")
p.add_argument("--ddp", default="torch", choices=["torch", "manual"])
p.add_argument("--nan-check", default="none", choices=["none", "megatron", "detectron", "skip"])
p.add_argument("--precision", default="fp32", choices=["fp32", "amp16", "pure16"])
p.add_argument("--init-scale", type=float, default=65536.0)
p.add_argument("--growth-interval", type=int, default=20)
p.add_argument("--min-loss-scale", type=float, default=0.0)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--log-grad-norm-every-micro", action="store_true")
p.add_argument("--attn", action="store_true", help="use a masked self-attention block")
p.add_argument("--mask-value", type=float, default=float("-inf"))
p.add_argument("--anomaly", action="store_true")
p.add_argument("--fault", default="none",
               choices=["none", "blank_record", "mislabeled_shard", "raw_shard"])
p.add_argument("--norm-eps", type=float, default=0.0)
p.add_argument("--consistency", type=float, default=0.0, help="weight of the two-view feature consistency loss")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=30)
p.add_argument("--fault-len", type=int, default=1)
p.add_argument("--style", default="megatron", choices=["megatron", "kv", "logging", "tqdm"])
p.add_argument("--log-interval", type=int, default=5)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=31900)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--seed", type=int, default=1234)
p.add_argument("--save", default="")
p.add_argument("--noisy", action="store_true", help="print the usual start-up warnings")
args = p.parse_args()

FEAT = 32
NCLS = 10


class Block(nn.Module):
    def __init__(self, d, mask_value):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)
        self.mask_value = mask_value

    def forward(self, x):  # x: B, T, d
        q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        T = x.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        scores = scores.masked_fill(causal, self.mask_value)
        return x + self.proj(scores.softmax(-1) @ v)


class Net(nn.Module):
    def __init__(self, attn=False, mask_value=float("-inf")):
        super().__init__()
        self.inp = nn.Linear(FEAT, 128)
        self.attn = Block(16, mask_value) if attn else None
        self.body = nn.Sequential(nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 128), nn.GELU())
        self.head = nn.Linear(128, NCLS)

    def forward(self, x):
        h = self.inp(x)
        if self.attn is not None:
            B = h.shape[0]
            h = self.attn(h.view(B, 8, 16)).reshape(B, 128)
        h = self.body(h)
        return self.head(h), h


class Shard:
    """Synthetic sharded dataset: raw records are normalised per record, like many feature pipelines."""

    def __init__(self, rank, seed):
        g = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(FEAT, NCLS, generator=g)
        self.g = torch.Generator().manual_seed(seed + 1000 * (rank + 1))
        self.rank = rank

    def raw_batch(self, n):
        raw = torch.randn(n, FEAT, generator=self.g) * 40.0 + 300.0
        return raw

    def labels(self, x):
        return (x @ self.teacher).argmax(-1)

    def get(self, step, n, fault_active):
        raw = self.raw_batch(n)
        if fault_active and args.fault == "blank_record":
            raw[n // 3] = 0.0  # zero-filled record from a truncated shard
        if fault_active and args.fault == "raw_shard":
            x = raw * 300.0  # shard written without normalisation, in raw sensor units
        else:
            x = (raw - raw.mean(1, keepdim=True)) / (raw.std(1, keepdim=True) + args.norm_eps)
        y = self.labels(torch.nan_to_num(x))
        if fault_active and args.fault == "mislabeled_shard":
            y = torch.randint(0, NCLS, (n,), generator=self.g)
        return x, y


def setup_logging(rank):
    if args.style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
            stream=sys.stdout,
        )
    return logging.getLogger("trainer")


def main(local_rank=None, world_from_spawn=None):
    if world_from_spawn is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(local_rank),
                          WORLD_SIZE=str(world_from_spawn), LOCAL_RANK=str(local_rank))
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    log = setup_logging(rank)

    def info(msg, all_ranks=False):
        if rank != 0 and not all_ranks:
            return
        if args.style == "logging":
            log.info(msg)
        else:
            print(msg, flush=True)

    def warn(msg):
        if args.style == "logging":
            log.warning(msg)
        else:
            print(f"WARNING: {msg}", flush=True)

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    if args.noisy and rank == 0:
        warnings.warn("torch.distributed: TF32 is not available on this device; "
                      "falling back to full fp32 matmul precision", UserWarning)

    info(f"> initialized world size {world} on {socket.gethostname()} backend="
         f"{'gloo' if distributed else 'none'}")
    info(f"> building model: params={sum(p.numel() for p in Net(args.attn).parameters())} "
         f"precision={args.precision} optimizer={args.opt} lr={args.lr} eps={args.eps} clip={args.clip}")

    model = Net(args.attn, args.mask_value)
    if args.precision == "pure16":
        model = model.half()
    core = model
    if distributed and args.ddp == "torch":
        model = nn.parallel.DistributedDataParallel(model)
    elif distributed:
        for prm in core.parameters():
            dist.broadcast(prm.data, 0)

    if args.opt == "sgd":
        opt = torch.optim.SGD(core.parameters(), lr=args.lr, momentum=0.9)
    elif args.opt == "adam":
        opt = torch.optim.Adam(core.parameters(), lr=args.lr, eps=args.eps)
    else:
        opt = torch.optim.AdamW(core.parameters(), lr=args.lr, eps=args.eps, weight_decay=0.1)

    total = args.sched_total or args.steps
    if args.sched == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=total, pct_start=0.1)
    elif args.sched == "cosine":
        def f(s):
            if s < args.warmup:
                return (s + 1) / args.warmup
            return 0.5 * (1 + math.cos(math.pi * min(1.0, (s - args.warmup) / max(1, total - args.warmup))))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, f)
    else:
        sched = None

    scaler = None
    if args.precision == "amp16":
        scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, growth_interval=args.growth_interval)
        info(f"> fp16 dynamic loss scaling: initial scale {args.init_scale}, growth interval "
             f"{args.growth_interval}, min scale {args.min_loss_scale}")

    data = Shard(rank, args.seed)
    micro = args.batch // args.grad_accum
    skipped = 0
    nan_iters = 0
    t0 = time.time()
    pbar = None
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=110, file=sys.stderr)
    ema = None

    for it in range(1, args.steps + 1):
        fault_active = (args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank)
                        and args.fault_step <= it < args.fault_step + args.fault_len)
        opt.zero_grad(set_to_none=True)
        loss_acc = 0.0
        for mi in range(args.grad_accum):
            x, y = data.get(it, micro, fault_active)
            if args.precision == "pure16":
                x = x.half()
            n = x.shape[0]
            if args.consistency:
                x_aug = x * (1 + 0.05 * torch.randn(x.shape, generator=data.g).to(x.dtype))
                x_in = torch.cat([x, x_aug])
            else:
                x_in = x
            if args.precision == "amp16":
                with torch.autocast("cpu", dtype=torch.float16):
                    logits, h = model(x_in)
                    loss = F.cross_entropy(logits[:n].float(), y)
            else:
                logits, h = model(x_in)
                loss = F.cross_entropy(logits[:n].float(), y)
            if args.consistency:
                # euclidean distance between the features of the two views
                dist_v = ((h[:n].float() - h[n:].float()) ** 2).sum(-1).sqrt()
                loss = loss + args.consistency * dist_v.mean()
            loss = loss / args.grad_accum
            if args.nan_check == "detectron" and not torch.isfinite(loss).all():
                raise FloatingPointError(
                    f"Loss became infinite or NaN at iteration={it}!\nloss_dict = {{'loss_cls': {loss.item()}}}")
            if args.nan_check == "skip":
                ok = torch.tensor([1.0 if torch.isfinite(loss).all() else 0.0])
                if distributed:
                    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
                if ok.item() == 0.0:
                    if not torch.isfinite(loss).all():
                        print(f"[rank{rank}] WARNING: non-finite loss ({loss.item()}) at iteration {it}; "
                              f"skipping this batch on all ranks", flush=True)
                    nan_iters += 1
                    break
            if scaler is not None:
                scaler.scale(loss).backward()
                if args.log_grad_norm_every_micro:
                    scaler.unscale_(opt)
                    gn_micro = torch.nn.utils.clip_grad_norm_(core.parameters(), float("inf"))
            else:
                loss.backward()
            loss_acc += loss.item()
        else:
            pass
        if args.nan_check == "skip" and ok.item() == 0.0:
            opt.zero_grad(set_to_none=True)
            if sched:
                sched.step()
            continue

        if distributed and args.ddp == "manual":
            if args.nan_check == "megatron":
                local = torch.sqrt(sum((p_.grad.float() ** 2).sum() for p_ in core.parameters()))
                assert not local.isnan().item(), (
                    f"Rank {rank}: found NaN in local grad norm in backward pass before data-parallel "
                    f"communication collective. Device: cpu, node: {socket.gethostname()}")
            for p_ in core.parameters():
                dist.all_reduce(p_.grad, op=dist.ReduceOp.SUM)
                p_.grad /= world

        if scaler is not None:
            if not args.log_grad_norm_every_micro:
                scaler.unscale_(opt)
            gnorm = torch.nn.utils.clip_grad_norm_(core.parameters(), args.clip)
            before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            after = scaler.get_scale()
            if args.min_loss_scale and after < args.min_loss_scale:
                scaler.update(args.min_loss_scale)
                after = args.min_loss_scale
            if after < before or (after == before and after == args.min_loss_scale and not math.isfinite(gnorm.item())):
                skipped += 1
                if rank == 0 and args.style != "megatron":
                    warn(f"Gradient overflow. Skipping step {it}, loss scaler reducing loss scale from "
                         f"{before} to {after}")
        else:
            if args.clip > 0:
                gnorm = torch.nn.utils.clip_grad_norm_(core.parameters(), args.clip,
                                                       error_if_nonfinite=args.clip_error_if_nonfinite)
            else:
                gnorm = torch.sqrt(sum((p_.grad.float() ** 2).sum() for p_ in core.parameters()))
            opt.step()
        if sched:
            sched.step()

        lval = loss_acc
        if not math.isfinite(lval):
            nan_iters += 1
        if ema is None:
            ema = lval
        if math.isfinite(lval) and math.isfinite(ema) and it > 10 and lval > 3 * ema and rank == 0:
            warn(f"loss spike at iteration {it}: {lval:.4f} vs running mean {ema:.4f}")
        if math.isfinite(lval):
            ema = 0.9 * ema + 0.1 * lval if math.isfinite(ema) else lval
        lr = opt.param_groups[0]["lr"]
        gn = gnorm.item()
        if pbar is not None:
            pbar.set_postfix(loss=f"{lval:.4f}", lr=f"{lr:.2e}", gnorm=f"{gn:.3f}")
            pbar.update(1)
        if it % args.log_interval == 0 or it == 1:
            el = (time.time() - t0) * 1000 / it
            if args.style == "megatron":
                line = (f" iteration {it:8d}/{args.steps:8d} | consumed samples: {it * args.batch * world:12d} |"
                        f" elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.6E} |"
                        f" global batch size: {args.batch * world:5d} | lm loss: {lval:.6E} |")
                if scaler is not None:
                    line += f" loss scale: {scaler.get_scale():.1f} |"
                line += (f" grad norm: {gn:.3f} | number of skipped iterations: {skipped:3d} |"
                         f" number of nan iterations: {nan_iters:3d} |")
                info(line)
            elif args.style in ("kv", "logging"):
                extra = f" loss_scale={scaler.get_scale():.1f}" if scaler is not None else ""
                info(f"step={it} rank={rank} loss={lval:.5f} lr={lr:.3e} grad_norm={gn:.4f}{extra} "
                     f"ms_per_step={el:.1f}", all_ranks=True)
            else:
                pass
    if pbar is not None:
        pbar.close()

    # evaluation
    with torch.no_grad():
        g = Shard(99, args.seed)
        x, y = g.get(0, 512, False)
        if args.precision == "pure16":
            x = x.half()
        logits, _ = core(x)
        acc = (logits.argmax(-1) == y).float().mean().item()
        vloss = F.cross_entropy(logits.float(), y).item()
    info(f"> evaluation after {args.steps} iterations | val loss: {vloss:.6E} | val acc: {acc:.4f}")
    if args.save and rank == 0:
        torch.save(core.state_dict(), args.save)
        info(f"> saved checkpoint to {args.save}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    info("> training finished")


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
