"""Tiny training loop used to study runs ended by outside signals.

Flags select the launch form, how verbose the run is, and which signal handlers
are installed; the signal itself is always sent from outside (kill, timeout,
setsid/nohup, a pipe reader that exits).
"""
import argparse
import logging
import os
import signal
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--launch", default="torchrun", choices=["torchrun", "spawn", "single"])
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=45230)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--step-sleep", type=float, default=0.3)
p.add_argument("--pid-dir", default=None, help="write pid files here so a shell can signal us")
p.add_argument("--usr1", default="none", choices=["none", "sync", "local"],
               help="SIGUSR1 preemption handler: checkpoint then exit (sync agrees across ranks)")
p.add_argument("--term-ckpt", action="store_true", help="SIGTERM handler: save checkpoint then exit")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--noise", action="store_true", help="print healthy-but-alarming warnings")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--dl-workers", type=int, default=0)
p.add_argument("--rank0-stdout", action="store_true", help="only rank 0 prints metrics")
p.add_argument("--sigpipe-default", action="store_true", help="signal.signal(SIGPIPE, SIG_DFL)")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()


class Synth(Dataset):
    def __init__(self, n=4096):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if args.dl_workers:
            time.sleep(0.01)
        return self.x[i], self.y[i]


def worker_init(wid):
    if args.pid_dir:
        r = os.environ.get("RANK", "0")
        with open(os.path.join(args.pid_dir, f"dlworker.r{r}.w{wid}"), "w") as f:
            f.write(str(os.getpid()))


STOP = {"flag": False, "sig": None}


def on_usr1(signum, frame):
    STOP["flag"] = True
    STOP["sig"] = signum


def run(rank, world):
    if args.sigpipe_default:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")

    def say(msg):
        if args.rank0_stdout and rank != 0:
            return
        if args.use_logging:
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.pg_timeout))
    if args.usr1 != "none":
        signal.signal(signal.SIGUSR1, on_usr1)
        say("installed SIGUSR1 preemption handler (checkpoint and exit)")
    if args.term_ckpt:
        signal.signal(signal.SIGTERM, on_usr1)
        say("installed SIGTERM handler (checkpoint and exit)")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.noise:

        sched.step()
        scaler = torch.amp.GradScaler("cuda")
        torch.nn.functional.softmax(torch.randn(3, 3))
        if torch.cuda.is_available() is False:
            say("cuda not available, training on cpu")

    ds = Synth()
    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    dl = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.dl_workers, worker_init_fn=worker_init,
                    persistent_workers=args.dl_workers > 0)
    it = iter(dl)
    lossf = nn.CrossEntropyLoss()
    rng = range(1, args.steps + 1)
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        rng = tqdm(rng, desc="train", mininterval=0)
    say(f"start training: world_size={world} steps={args.steps}")
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"pid.r{rank}"), "w") as f:
            f.write(str(os.getpid()))
    for step in rng:
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl)
            x, y = next(it)
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        time.sleep(args.step_sleep)
        if step % 2 == 0 or args.rank0_stdout:
            msg = f"step {step}/{args.steps} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}"
            if args.use_tqdm and rank == 0:
                rng.set_postfix(loss=f"{loss.item():.4f}")
            else:
                say(msg)
        if args.usr1 != "none" or args.term_ckpt:
            stop = STOP["flag"]
            if args.usr1 == "sync" and world > 1:
                t = torch.tensor([1 if stop else 0])
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                stop = bool(t.item())
            if stop:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                path = os.path.join(args.ckpt_dir, f"preempt_step{step}_rank{rank}.pt")
                sig = STOP["sig"]
                say(f"received {signal.Signals(sig).name if sig else 'peer stop request'}: saving checkpoint to {path}")
                torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, path)
                say(f"checkpoint saved at step {step}; exiting for requeue")
                if world > 1 and args.usr1 == "sync":
                    dist.destroy_process_group()
                sys.exit(0)
    say(f"training finished: final loss {loss.item():.4f}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["RANK"] = str(rank)
    run(rank, world)


if __name__ == "__main__":
    if args.launch == "torchrun":
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif args.launch == "spawn":
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.nprocs,), nprocs=args.nprocs, join=True)
    else:
        run(0, 1)
