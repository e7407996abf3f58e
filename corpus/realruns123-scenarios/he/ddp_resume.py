"""Toy DDP training with checkpoint save / resume (gloo, CPU).

Two phases: `--phase save` trains and writes a checkpoint, `--phase resume` loads it and continues.
Flags change model config, checkpoint layout etc. so resume reproduces real-world bugs.
"""
import argparse
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
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.GELU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_blocks=2, n_out=4, head_name="head"):
        super().__init__()
        self.embed = nn.Linear(d_in, hidden)
        self.blocks = nn.ModuleList([Block(hidden) for _ in range(n_blocks)])
        self.head_name = head_name
        setattr(self, head_name, nn.Linear(hidden, n_out))

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h)
        return getattr(self, self.head_name)(h)


class RunConfig:  # plain object stored in the checkpoint ("for reproducibility")
    def __init__(self, **kw):
        self.__dict__.update(kw)


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--phase", choices=["save", "resume", "train"], default="train")
    p.add_argument("--ckdir", default="ckpt")
    p.add_argument("--ckfile", default=None, help="explicit checkpoint file for resume")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--head-name", default="head")
    p.add_argument("--freeze-embed", action="store_true")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--save-mode", choices=["rank0", "ddp-raw", "sharded-optim", "per-rank", "all-ranks-same",
                                           "fileobj", "meta"], default="rank0")
    p.add_argument("--load-mode", choices=["plain", "ddp-raw", "sharded-optim", "per-rank", "strict-false"],
                   default="plain")
    p.add_argument("--ckname", default="step{step}.pt")
    p.add_argument("--weights-only", choices=["default", "true", "false"], default="default")
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--bar", action="store_true")
    p.add_argument("--noisy", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def setup():
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def main():
    args = get_args()
    rank, world = setup()
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        def log(msg):
            print(f"[rank{rank}] {msg}", flush=True)

    torch.manual_seed(args.seed)
    model = Net(hidden=args.hidden, n_blocks=args.blocks, head_name=args.head_name)
    if args.freeze_embed:
        for p_ in model.embed.parameters():
            p_.requires_grad_(False)
    ddp = DDP(model) if world > 1 else model

    params = [p_ for p_ in ddp.parameters() if p_.requires_grad]
    if args.save_mode == "sharded-optim" or args.load_mode == "sharded-optim":
        # naive ZeRO-1 style: each rank keeps Adam state only for its slice of the parameters
        params = [p_ for i, p_ in enumerate(params) if i % world == rank]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.9)

    g = torch.Generator().manual_seed(1234)
    X = torch.randn(512, 16, generator=g)
    Y = torch.randint(0, 4, (512,), generator=g)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None)

    n_params = sum(p_.numel() for p_ in model.parameters())
    log(f"world_size={world} model params={n_params} hidden={args.hidden} blocks={args.blocks} "
        f"trainable_in_opt={sum(p_.numel() for p_ in params)}")

    start_step = 0
    if args.phase == "resume":
        if args.load_mode in ("per-rank", "sharded-optim"):
            path = args.ckfile or os.path.join(args.ckdir, f"rank{rank}", "last.pt")
        else:
            path = args.ckfile or os.path.join(args.ckdir, "last.pt")
        log(f"resuming from {path}")
        kw = {}
        if args.weights_only != "default":
            kw["weights_only"] = args.weights_only == "true"
        ck = torch.load(path, map_location="cpu", **kw)
        if args.load_mode == "strict-false":
            res = model.load_state_dict(ck["model"], strict=False)
            log(f"loaded with strict=False: missing={res.missing_keys} unexpected={res.unexpected_keys}")
        else:
            model.load_state_dict(ck["model"])
        if "optimizer" in ck and args.load_mode != "strict-false":
            opt.load_state_dict(ck["optimizer"])
            sched.load_state_dict(ck["scheduler"])
        start_step = ck.get("step", 0)
        log(f"resumed at step {start_step}, lr={sched.get_last_lr()[0]:.6f}")

    if args.noisy and rank == 0:
        warnings.warn("torch.utils.data: 'batch_size' is not divisible by world size; "
                      "the last batch may be smaller on some ranks", UserWarning)

    loss_fn = nn.CrossEntropyLoss()
    it = iter(dl)
    epoch = 0
    bar = None
    if args.bar and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, initial=start_step, desc="train", dynamic_ncols=False, ncols=90)
    for step in range(start_step, args.steps):
        try:
            xb, yb = next(it)
        except StopIteration:
            epoch += 1
            if sampler is not None:
                sampler.set_epoch(epoch)
            it = iter(dl)
            xb, yb = next(it)
        out = ddp(xb)
        loss = loss_fn(out, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}")
        elif step % 5 == 0:
            log(f"step {step} loss={loss.item():.4f} grad_norm={gn.item():.3f} lr={sched.get_last_lr()[0]:.6f}")
        time.sleep(0.02)

        if args.phase != "train" and (step + 1) % args.save_every == 0:
            save(args, step + 1, rank, world, model, ddp, opt, sched, log)
    if bar is not None:
        bar.close()
    log("training finished")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def save(args, step, rank, world, model, ddp, opt, sched, log):
    state = {
        "model": (ddp.state_dict() if args.save_mode == "ddp-raw" else model.state_dict()),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "step": step,
        "world_size": world,
    }
    if args.save_mode == "meta":
        state["config"] = RunConfig(hidden=args.hidden, blocks=args.blocks, lr=1e-3, world_size=world)
    name = args.ckname.format(step=step, hidden=args.hidden, blocks=args.blocks, world=world)
    if args.save_mode in ("sharded-optim", "per-rank"):
        d = os.path.join(args.ckdir, f"rank{rank}")
        os.makedirs(d, exist_ok=True)
        torch.save(state, os.path.join(d, name))
        torch.save(state, os.path.join(d, "last.pt"))
        log(f"saved shard {d}/{name}")
    elif args.save_mode == "all-ranks-same":
        # every rank "atomically" writes the checkpoint: tmp file + rename
        os.makedirs(args.ckdir, exist_ok=True)
        final = os.path.join(args.ckdir, name)
        tmp = final + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, final)
        log(f"saved {final}")
    elif rank == 0:
        os.makedirs(args.ckdir, exist_ok=True)
        path = os.path.join(args.ckdir, name)
        if args.save_mode == "fileobj":
            with open(path, "wb") as f:
                torch.save(state, f)
        else:
            torch.save(state, path)
        last = os.path.join(args.ckdir, "last.pt")
        if os.path.lexists(last):
            os.remove(last)
        os.symlink(os.path.basename(path), last)
        log(f"saved checkpoint {path} ({os.path.getsize(path)} bytes)")
    if world > 1:
        dist.barrier()


if __name__ == "__main__":
    main()
