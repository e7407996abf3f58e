"""Small MLP classifier with save/resume, launched with torch.multiprocessing.spawn,
torchrun (env://) or as a single process.

  --spawn N        start N ranks with mp.spawn (MASTER_ADDR/MASTER_PORT from the environment)
  --resume PATH    resume model+optimizer (+step) from PATH
  --hidden H       width of the hidden layers
  --depth D        number of hidden layers
  --out-dir DIR    where checkpoints are written every --save-every steps
  --safe-load      torch.load(weights_only=True) (default of torch>=2.6) else weights_only=False
"""
import argparse
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

log = logging.getLogger("train")


def parse(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--resume", default=None)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--out-dir", default="out/ckpt")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--safe-load", type=int, default=1)
    p.add_argument("--save-args", type=int, default=0, help="store the argparse Namespace in the checkpoint")
    p.add_argument("--no-decay-bias", type=int, default=0, help="put biases in a param group without weight decay")
    p.add_argument("--pg-timeout", type=int, default=30)
    return p.parse_args(argv)


def build(args):
    layers, d = [], 32
    for _ in range(args.depth):
        layers += [nn.Linear(d, args.hidden), nn.GELU()]
        d = args.hidden
    layers.append(nn.Linear(d, 10))
    return nn.Sequential(*layers)


def setup_logging(rank):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s", force=True)


def worker(rank, world, args):
    setup_logging(rank)
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
        log.info("process group ready (world_size=%d, master=%s:%s)", world,
                 os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT"))
    torch.manual_seed(1234)
    model = build(args)
    if args.no_decay_bias:
        decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.01}]
    opt = torch.optim.AdamW(groups, lr=args.lr)
    start = 0
    if args.resume:
        log.info("resuming from %s", args.resume)
        ckpt = torch.load(args.resume, map_location="cpu", weights_only=bool(args.safe_load))
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt.get("step", 0)
        log.info("resumed at step %d", start)
    log.info("model has %d parameters", sum(p.numel() for p in model.parameters()))
    if distributed:
        model = DDP(model)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(start + 1, start + args.steps + 1):
        x = torch.randn(32, 32, generator=g)
        y = (x[:, :10].argmax(1))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log.info("step %d loss %.4f %.1f it/s", step, loss.item(), (step - start) / (time.time() - t0))
        if step % args.save_every == 0 and rank == 0:
            os.makedirs(args.out_dir, exist_ok=True)
            path = os.path.join(args.out_dir, f"step{step:06d}.pt")
            sd = model.module.state_dict() if distributed else model.state_dict()
            payload = {"model": sd, "optimizer": opt.state_dict(), "step": step}
            if args.save_args:
                payload["args"] = args
            torch.save(payload, path)
            log.info("saved checkpoint %s", path)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log.info("done")


def main():
    args = parse()
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46245")
        mp.spawn(worker, args=(args.spawn, args), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        worker(0, 1, args)


if __name__ == "__main__":
    main()
