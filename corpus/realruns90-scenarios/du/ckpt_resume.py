"""Multi-rank training with checkpoint save / resume. Flags select fault, rank and step.

Faults (--fault):
  none            healthy
  weights_only    save a TrainConfig dataclass inside the checkpoint, resume with plain torch.load
  ddp_prefix      save the DDP wrapper's state_dict, resume into the bare model
  opt_groups      resume with the optimizer built with split (decay / no-decay) param groups
  no_barrier      rank 0 saves, other ranks load the file right away (no barrier)
  slow_save       rank 0 does slow eval + save while the others wait in a barrier
  slow_save_mon   same, but with monitored_barrier
  sched_total     OneCycleLR resumed with a shorter total_steps
  pickle_model    torch.save(model) where the model holds a lambda
  partial_tmp     healthy, but a stale *.tmp checkpoint is found on resume
"""
import argparse
import dataclasses
import glob
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclasses.dataclass
class TrainConfig:
    hidden: int = 64
    lr: float = 1e-2
    steps: int = 40
    seed: int = 0


class Net(nn.Module):
    def __init__(self, hidden=64, extra_layer=False, act=None):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 4)
        self.norm = nn.LayerNorm(hidden)
        self.extra = nn.Linear(hidden, hidden) if extra_layer else None
        self.act = act if act is not None else torch.relu

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = self.norm(self.act(self.fc2(h)))
        if self.extra is not None:
            h = self.act(self.extra(h))
        return self.head(h)


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=20)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--extra-layer", action="store_true")
    p.add_argument("--ckpt-dir", default="/work/rr90/du/ckpts/default")
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--resume", default="")
    p.add_argument("--big", type=int, default=0, help="extra MB of buffers saved in checkpoint")
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--total-steps", type=int, default=0)
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--save-fileobj", action="store_true", help="write through a python file object (atomic tmp+rename)")
    p.add_argument("--map-location", default="cpu", help="'none' = keep the devices recorded in the file")
    p.add_argument("--eval-seconds", type=float, default=0.0)
    return p.parse_args()


def main():
    args = get_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train").info
        warn = logging.getLogger("train").warning
    else:
        def log(msg):
            print(f"[rank{rank}] {msg}", flush=True)
        warn = log
    torch.manual_seed(0)
    cfg = TrainConfig(hidden=args.hidden, steps=args.steps)

    act = None
    if args.fault == "pickle_model":
        act = lambda t: torch.nn.functional.gelu(t) * 1.0  # noqa: E731
    model = Net(args.hidden, args.extra_layer, act=act)
    if args.big:
        model.register_buffer("ema_shadow", torch.randn(args.big * 262144))
    ddp = DDP(model)

    if args.fault == "opt_groups" and args.resume:
        decay = [p for n, p in model.named_parameters() if p.ndim > 1]
        no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    total = args.total_steps or args.steps
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total)

    start = 0
    if args.fault == "partial_tmp" and rank == 0:
        for tmp in sorted(glob.glob(os.path.join(args.ckpt_dir, "*.tmp"))):
            warn(f"WARNING found incomplete checkpoint {tmp} (size {os.path.getsize(tmp)} bytes) "
                 f"-- previous job was probably killed during save; ignoring it")
    if args.resume:
        log(f"resuming from {args.resume}")
        if args.fault == "none" or args.fault == "partial_tmp":
            ckpt = torch.load(args.resume, map_location="cpu", weights_only=False)
        else:
            ckpt = torch.load(args.resume, map_location=None if args.map_location == "none" else args.map_location)
        if args.fault == "none" and args.extra_layer:
            res = model.load_state_dict(ckpt["model"], strict=False)
            warn(f"WARNING: non-strict load; missing keys: {res.missing_keys}; unexpected keys: {res.unexpected_keys}")
        else:
            model.load_state_dict(ckpt["model"])
        healthy = args.fault in ("none", "partial_tmp")
        if healthy and args.extra_layer:
            warn("WARNING: model architecture changed -> optimizer state from checkpoint NOT restored (fresh AdamW moments)")
        else:
            opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        if healthy and sched.total_steps != total:
            warn(f"WARNING: scheduler total_steps in checkpoint ({sched.total_steps}) != requested ({total}); overriding")
            sched.total_steps = total
        start = ckpt["step"]
        log(f"resumed at step {start}, lr={sched.get_last_lr()[0]:.5f}")

    g = torch.Generator().manual_seed(1234 + rank)
    X = torch.randn(512, 16, generator=g)
    Y = (X[:, :4].sum(1) > 0).long() + 2 * (X[:, 4] > 0).long()
    lossf = nn.CrossEntropyLoss()
    os.makedirs(args.ckpt_dir, exist_ok=True)

    it = range(start, args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0.2)
    for step in it:
        idx = torch.randint(0, 512, (32,), generator=g)
        out = ddp(X[idx])
        loss = lossf(out, Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 5 == 0 and not (args.tqdm and rank == 0):
            log(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")
        elif step % 5 == 0 and args.tqdm:
            it.set_postfix(loss=f"{loss.item():.3f}")

        if (step + 1) % args.save_every == 0:
            path = os.path.join(args.ckpt_dir, f"step_{step + 1}.pt")
            if rank == 0:
                if args.eval_seconds:
                    log(f"running eval before checkpoint ({args.eval_seconds}s)")
                    t0 = time.time()
                    while time.time() - t0 < args.eval_seconds:
                        with torch.no_grad():
                            model(torch.randn(256, 16))
                if args.fault == "pickle_model":
                    obj = model
                else:
                    obj = {"model": (ddp.state_dict() if args.fault == "ddp_prefix" else model.state_dict()),
                           "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                           "step": step + 1}
                    if args.fault == "weights_only":
                        obj["config"] = cfg
                with open(os.path.join(args.ckpt_dir, "writer.pid"), "w") as f:
                    f.write(str(os.getpid()))
                log(f"saving checkpoint to {path}")
                if args.save_fileobj:
                    with open(path + ".tmp", "wb") as f:
                        torch.save(obj, f)
                    os.replace(path + ".tmp", path)
                else:
                    torch.save(obj, path)
                log(f"saved {path} ({os.path.getsize(path) / 1e6:.2f} MB)")
            if args.fault == "no_barrier" and rank != 0:
                log(f"loading averaged weights from {path}")
                sd = torch.load(path, map_location="cpu")
                model.load_state_dict(sd["model"])
            elif args.fault == "slow_save_mon":
                dist.monitored_barrier(timeout=timedelta(seconds=args.timeout))
            else:
                dist.barrier()
    log("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
