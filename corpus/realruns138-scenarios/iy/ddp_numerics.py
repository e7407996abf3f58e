"""Tiny DDP regression/classification trainer used to reproduce numeric failures.

Faults (--fault): none | badsample | divzero | sqrtzero | fp16overflow | explode | lrzero | wdcollapse
                  | maskfill16 | scalerhalf | sample
"""
import argparse
import logging
import math
import os
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
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--wd", type=float, default=0.0)
p.add_argument("--optim", default="adamw")
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--clip-strict", action="store_true", help="error_if_nonfinite")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--amp", default="none")
p.add_argument("--nan-guard", action="store_true", help="stop on non-finite loss like detectron2")
p.add_argument("--style", default="print", help="print|logging|tqdm")
p.add_argument("--sched", default="none", help="none|cosine0|steplr")
p.add_argument("--resume-opt", default="")
p.add_argument("--save-opt", default="")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--persist", action="store_true", help="fault repeats every step after --bad-step")
p.add_argument("--min-scale", type=float, default=0.0)
p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with N procs")
p.add_argument("--port", default="46741")
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        h = self.fc(x)
        # hand-rolled batch norm (no eps inside the sqrt)
        mu = h.mean(0, keepdim=True)
        var = ((h - mu) ** 2).mean(0, keepdim=True)
        std = torch.sqrt(var)
        return torch.relu((h - mu) / (std + 1e-5)) + x


class Net(nn.Module):
    def __init__(self, d_in=16, d=64, n_cls=8):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.head = nn.Linear(d, n_cls)

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


def make_batch(step, rank, bs=16):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(bs, 16, generator=g)
    y = (x[:, :3].sum(-1) * 2).long().clamp(-4, 3) + 4
    mask = torch.ones(bs)
    bad = rank == args.bad_rank and (step == args.bad_step or (args.persist and step > args.bad_step))
    if bad and args.fault == "badsample":
        # a record decoded with a wrong byte order -> absurd magnitudes
        x[3] = torch.tensor(float(3.4e38)) * torch.sign(x[3])
    if bad and args.fault == "divzero":
        mask = torch.zeros(bs)  # every sample in this shard filtered out (all padding)
    if bad and args.fault == "sqrtzero":
        x[:] = 0.0  # blank records
    if bad and args.fault == "fp16overflow":
        x = x * 3e4  # un-normalised raw sensor values
    return x, y, mask


def main_worker(rank, world):
    if args.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = args.port
        os.environ["RANK"] = str(rank)
        os.environ["WORLD_SIZE"] = str(world)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    world = dist.get_world_size()
    if args.style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
        )
    log = logging.getLogger("train")

    def out(msg):
        if args.style == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    torch.manual_seed(0)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    model = Net(d=args.hidden)
    if args.fault in ("scalerhalf", "halfmodel", "proto16"):
        model = model.half()  # halve memory
    ddp = DDP(model)
    if args.optim == "sgd":
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.wd)
    else:
        decay = [p_ for n, p_ in ddp.named_parameters() if p_.ndim > 1]
        nodecay = [p_ for n, p_ in ddp.named_parameters() if p_.ndim <= 1]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": args.wd}, {"params": nodecay, "weight_decay": 0.0}],
            lr=args.lr,
        )
    if args.resume_opt:
        out(f"resuming optimizer state from {args.resume_opt}")
        sd = torch.load(args.resume_opt, map_location="cpu")
        opt.load_state_dict(sd["optimizer"])
        out(f"optimizer state restored (step {sd.get('step')})")
    sched = None
    if args.sched == "cosine0":
        # T_max given in epochs while stepping per batch -> lr hits 0 almost at once
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1, eta_min=0.0)
    elif args.sched == "linear":
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)
    elif args.sched == "steplr":
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.01)
    scaler = None
    if args.amp == "fp16" or args.fault == "scalerhalf":
        scaler = torch.amp.GradScaler("cpu")
    out(f"world_size={world} params={sum(p_.numel() for p_ in model.parameters())} "
        f"optim={args.optim} lr={args.lr} wd={args.wd} amp={args.amp}")

    it = range(args.steps)
    if args.style == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", file=sys.stderr, mininterval=0, ncols=90)
    for step in it:
        x, y, mask = make_batch(step, rank)
        if args.fault in ("scalerhalf", "proto16"):
            x = x.half()
        with torch.autocast("cpu", dtype=torch.float16, enabled=args.amp == "fp16"):
            logits = ddp(x)
            if args.fault == "proto16":
                protos = torch.eye(8, dtype=logits.dtype)
                logits = -torch.cdist(logits, protos)  # prototype (distance) classifier
            if args.fault == "maskfill16":
                pad = torch.zeros_like(logits, dtype=torch.bool)
                pad[:, -1] = True
                logits = logits.masked_fill(pad, -1e9)
        logits = logits.float()
        if args.fault == "badsample":
            # manual cross-entropy: log of softmax probability
            probs = torch.softmax(logits, -1)
            per = -torch.log(probs.gather(1, y[:, None]).squeeze(1))
        else:
            per = F.cross_entropy(logits, y, reduction="none")
        loss = (per * mask).sum() / mask.sum()
        if args.nan_guard and not torch.isfinite(loss).all():
            raise FloatingPointError(
                f"Loss became infinite or NaN at iteration={step}!\nloss_dict = {{'loss_cls': {loss.item()}}}"
            )
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        gn = None
        if args.clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip,
                                                error_if_nonfinite=args.clip_strict)
        else:
            gn = torch.norm(torch.stack([q.grad.detach().norm() for q in ddp.parameters()
                                         if q.grad is not None]))
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
            if args.min_scale and scaler.get_scale() <= args.min_scale:
                raise FloatingPointError(
                    f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                    "Try lowering the learning rate, using gradient clipping or increasing the batch size."
                )
        else:
            opt.step()
        if sched is not None:
            sched.step()
        lr = opt.param_groups[0]["lr"]
        msg = f"step {step:3d} loss {loss.item():.4f} grad_norm {float(gn):.4g} lr {lr:.3e}"
        if scaler is not None:
            msg += f" scale {scaler.get_scale():.1f}"
        if args.style == "tqdm":
            it.set_postfix(loss=f"{loss.item():.3f}", gn=f"{float(gn):.3g}")
            if step % 4 == 0:
                it.write(f"[rank{rank}] {msg}")
        else:
            out(msg)
        if args.fault == "sample" and step % 3 == 0:
            # qualitative check: sample a few predictions, temperature annealed to 0 at --bad-step
            temp = max(0.0, 1.0 - step / args.bad_step)
            with torch.no_grad():
                pr = torch.softmax(ddp.module(x[:4]) / temp, -1)
                pick = torch.multinomial(pr, 1)
            out(f"temperature {temp:.2f} sampled classes {pick.squeeze(1).tolist()}")
        time.sleep(0.05)
    if args.save_opt and rank == 0:
        torch.save({"optimizer": opt.state_dict(), "step": args.steps}, args.save_opt)
        out(f"saved optimizer state to {args.save_opt}")
    dist.barrier()
    out("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.spawn,), nprocs=args.spawn)
    else:
        main_worker(None, None)
