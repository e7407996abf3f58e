"""Toy DDP regression training used to reproduce ranks that get stuck around collectives.

Launch with torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
Flags select the fault (--fault), the rank (--fault-rank) and the step (--fault-step).
"""
import argparse
import faulthandler
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "uneven-shard", "rank0-eval-allreduce", "wait-flag", "monitored",
                        "mismatch", "straggler", "slow-ckpt", "ckpt-barrier", "early-return"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--pg-timeout", type=float, default=20.0)
p.add_argument("--dump-after", type=float, default=0.0, help="faulthandler.dump_traceback_later seconds")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true", help="tqdm progress bar on rank 0")
p.add_argument("--spawn", type=int, default=0, help="start N ranks with mp.spawn")
p.add_argument("--port", type=int, default=45750)
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--outdir", default="/tmp/hc_out")
p.add_argument("--samples", type=int, default=0)
args = p.parse_args()


def get_logger(rank):
    log = logging.getLogger("train")
    if args.use_logging:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(logging.Formatter(f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        return log.info, log.warning
    pr = lambda m: print(f"[rank{rank}] {m}", flush=True)
    return pr, pr


def make_data(rank, world):
    n = args.samples or 64 * args.steps
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 32, generator=g)
    y = x @ torch.randn(32, 1, generator=g) + 0.1 * torch.randn(n, 1, generator=g)
    if args.fault == "uneven-shard":
        # data lives in 5 shard files of different sizes; ranks take shards round-robin
        # (bug: no DistributedSampler / no padding, so ranks end up with different batch counts)
        bounds = [0, 200, 420, 600, 800, n]
        shards = [(bounds[k], bounds[k + 1]) for k in range(5)]
        idx = torch.cat([torch.arange(a, b) for a, b in shards[rank::world]])
        ds = TensorDataset(x[idx], y[idx])
        return DataLoader(ds, batch_size=16, shuffle=True)
    ds = TensorDataset(x, y)
    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    return DataLoader(ds, batch_size=16, sampler=sampler)


def run(rank, world):
    info, warn = get_logger(rank)
    if args.dump_after > 0:
        faulthandler.dump_traceback_later(args.dump_after, repeat=False, exit=False)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    info(f"process group ready: backend={dist.get_backend()} world_size={world} timeout={args.pg_timeout}s")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loader = make_data(rank, world)
    info(f"{len(loader)} batches per epoch on this rank")
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
    bar = None
    if args.progress and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps * args.epochs if args.fault != "uneven-shard" else len(loader) * args.epochs,
                   desc="train", dynamic_ncols=False, ncols=90, file=sys.stderr)
    step = 0
    t_last = time.time()
    data_time = 0.0
    t_data = time.time()
    for epoch in range(args.epochs):
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        for i, (xb, yb) in enumerate(loader):
            if args.fault != "uneven-shard" and i >= args.steps:
                break
            if args.fault == "wait-flag" and rank == args.fault_rank and step == args.fault_step:
                # this rank waits for rank 0 to publish the resolved data manifest
                flag = os.path.join(args.outdir, f"manifest_ready.epoch{epoch}")
                info(f"waiting for {flag}")
                while not os.path.exists(flag):
                    time.sleep(0.5)
            if args.fault == "straggler" and rank == args.fault_rank:
                time.sleep(args.step_sleep * 12)  # this node reads its shard from a slow NFS mount
            data_time += time.time() - t_data
            loss = nn.functional.mse_loss(ddp(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(args.step_sleep)
            step += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
            if step % 10 == 0:
                now = time.time()
                info(f"epoch {epoch} step {step} loss {loss.item():.4f} step_time {(now - t_last) / 10:.3f}s"
                     f" data_time {data_time / 10:.3f}s")
                t_last = now
                data_time = 0.0
                if args.fault == "rank0-eval-allreduce" and rank == 0 and step >= args.fault_step:
                    # average the metric across ranks for the log line -- only rank 0 logs
                    m = loss.detach().clone()
                    dist.all_reduce(m)
                    info(f"mean loss over ranks {m.item() / world:.4f}")
            if args.fault == "ckpt-barrier" and step == args.fault_step:
                if rank == 0:
                    path = os.path.join(args.outdir, f"ckpt_step{step}.pt")
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                    info(f"saved {path}")
                    dist.barrier()
                # other ranks go straight on with the next step
            if args.fault == "slow-ckpt" and step % args.fault_step == 0:
                if rank == 0:
                    info(f"saving checkpoint at step {step} ...")
                    t0 = time.time()
                    path = os.path.join(args.outdir, f"ckpt_step{step}.pt")
                    # slow shared filesystem: write in chunks with fsync
                    blob = torch.randn(2_000_000)
                    with open(path, "wb") as f:
                        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "buf": blob}, f)
                        f.flush(); os.fsync(f.fileno())
                    time.sleep(args.pg_timeout * 0.6)
                    info(f"checkpoint written to {path} in {time.time() - t0:.1f}s")
                dist.barrier()
                t_last = time.time()
            if args.fault == "monitored" and step == args.fault_step:
                if rank == args.fault_rank:
                    info("running extra validation pass before sync")
                    while True:  # validation loader is an infinite iterator (cycle)
                        time.sleep(0.2)
                dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout / 2))
            if args.fault == "mismatch" and step == args.fault_step:
                t = torch.ones(4)
                if rank == args.fault_rank:
                    dist.broadcast(t, src=0)
                else:
                    dist.all_reduce(t)
            if args.fault == "early-return" and step == args.fault_step and rank == args.fault_rank:
                info("no more data for this rank, leaving the training loop")
                return
            t_data = time.time()
    if bar is not None:
        bar.close()
    info(f"training done after {step} steps, final loss {loss.item():.4f}")
    dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), os.path.join(args.outdir, "final.pt"))
        info("saved final model")
    dist.destroy_process_group()


def spawn_main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
