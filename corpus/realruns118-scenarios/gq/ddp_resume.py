"""Tiny 2-rank DDP regression job with periodic checkpointing and resume.

Flags select the (mis)configuration; the failure itself comes from real torch code paths.
"""
import argparse
import glob
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt-dir", default="ckpt")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--keep-last", type=int, default=0, help="rotate checkpoints, 0 = keep all")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--extra-layer", action="store_true")
    p.add_argument("--resume", default="", help="path or 'latest'")
    p.add_argument("--strict", type=int, default=1)
    p.add_argument("--save-wrapped", action="store_true", help="save ddp_model.state_dict() (module. prefix)")
    p.add_argument("--save-args", action="store_true", help="store argparse namespace in checkpoint")
    p.add_argument("--no-decay-group", action="store_true", help="split params into decay/no-decay groups")
    p.add_argument("--eval-rank", type=int, default=-1, help="rank that evaluates the newest checkpoint each save")
    p.add_argument("--eval-pick", default="newest", choices=["newest", "latest-glob"])
    p.add_argument("--eval-wait", default="none", choices=["none", "barrier"])
    p.add_argument("--eval-samples", type=int, default=256)
    p.add_argument("--atomic", action="store_true", help="write to .tmp then os.replace")
    p.add_argument("--pad-mb", type=int, default=0, help="extra buffer size in MB (large checkpoints)")
    p.add_argument("--stage-from", default="", help="rank 0 copies this checkpoint from slow storage into --ckpt-dir first")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--sleep", type=float, default=0.05)
    p.add_argument("--timeout-s", type=int, default=30)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self, hidden, extra=False, pad_mb=0):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.norm = nn.LayerNorm(hidden)
        if extra:
            self.adapter = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)
        if pad_mb:
            self.register_buffer("feature_bank", torch.randn(pad_mb * 1024 * 256))
        self.extra = extra

    def forward(self, x):
        h = self.norm(self.encoder(x))
        if self.extra:
            h = h + self.adapter(h)
        return self.head(h)


def make_optimizer(model, args):
    if args.no_decay_group:
        decay = [p for n, p in model.named_parameters() if p.dim() > 1]
        no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
        groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.01}]
    return torch.optim.AdamW(groups, lr=1e-3)


def ckpt_path(d, step):
    return os.path.join(d, f"step_{step:06d}.pt")


def latest(d):
    files = sorted(glob.glob(os.path.join(d, "step_*.pt")))
    return files[-1] if files else None


def main():
    args = get_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Net(args.hidden, args.extra_layer, args.pad_mb)
    opt = make_optimizer(model, args)
    start = 0

    if args.stage_from:
        staged = os.path.join(args.ckpt_dir, os.path.basename(args.stage_from))
        if rank == 0:
            import shutil
            os.makedirs(args.ckpt_dir, exist_ok=True)
            print(f"[rank0] staging {args.stage_from} -> {staged}", flush=True)
            shutil.copyfile(args.stage_from, staged)
        args.resume = staged
    if args.resume:
        path = latest(args.ckpt_dir) if args.resume == "latest" else args.resume
        print(f"[rank{rank}] resuming from {path}", flush=True)
        ckpt = torch.load(path, map_location="cpu")
        res = model.load_state_dict(ckpt["model"], strict=bool(args.strict))
        if not args.strict:
            print(f"[rank{rank}] load_state_dict: {res}", flush=True)
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
        print(f"[rank{rank}] resumed at step {start}, loss at save {ckpt.get('loss', float('nan')):.4f}", flush=True)

    ddp = DDP(model, find_unused_parameters=args.find_unused)
    emodel = Net(args.hidden, args.extra_layer, args.pad_mb) if args.eval_rank == rank else None
    g = torch.Generator().manual_seed(1234 + rank)
    os.makedirs(args.ckpt_dir, exist_ok=True) if rank == 0 else None
    for step in range(start + 1, start + args.steps + 1):
        x = torch.randn(32, 16, generator=g)
        y = x[:, :4].sum(dim=1, keepdim=True)
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lt = loss.detach().clone()
        dist.all_reduce(lt)
        if rank == 0 and step % 5 == 0:
            print(f"step {step:4d} | loss {lt.item() / world:.4f} | lr {opt.param_groups[0]['lr']:.2e}", flush=True)
        time.sleep(args.sleep)

        if step % args.save_every == 0:
            path = ckpt_path(args.ckpt_dir, step)
            if rank == 0:
                state = {
                    "model": ddp.state_dict() if args.save_wrapped else ddp.module.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step,
                    "loss": lt.item() / world,
                }
                if args.save_args:
                    state["args"] = args
                t0 = time.time()
                if args.atomic:
                    torch.save(state, path + ".tmp")
                    os.replace(path + ".tmp", path)
                else:
                    torch.save(state, path)
                print(f"[rank0] saved checkpoint {path} ({os.path.getsize(path) / 1e6:.1f} MB, {time.time() - t0:.2f}s)", flush=True)
                if args.keep_last:
                    old = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))[:-args.keep_last]
                    for f in old:
                        os.remove(f)
                        print(f"[rank0] rotated out {f}", flush=True)
            if args.eval_rank == rank:
                # evaluator rank: evaluate a checkpoint while training continues
                xe = torch.randn(args.eval_samples, 16, generator=g)
                ye = xe[:, :4].sum(1, keepdim=True)
                if args.eval_pick == "newest":
                    # wait for the file rank 0 is writing for this step to appear
                    while not os.path.exists(path):
                        time.sleep(0.01)
                    target = path
                else:
                    cands = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))
                    target = cands[-1] if cands else None
                if target is None:
                    print(f"[rank{rank}] no checkpoint to evaluate yet", flush=True)
                else:
                    sd = torch.load(target, map_location="cpu")["model"]
                    emodel.load_state_dict(sd)
                    with torch.no_grad():
                        ev = nn.functional.mse_loss(emodel(xe), ye)
                    print(f"[rank{rank}] eval of {os.path.basename(target)}: mse {ev.item():.4f}", flush=True)
            if args.eval_wait == "barrier":
                dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
