"""Small DDP regression trainer with a lot of logging noise.

Flags pick the fault, the rank it hits and the step.  Launch with torchrun (or --spawn N).
"""
import argparse
import json
import logging
import math
import os
import sqlite3
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=12)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--style", default="std", choices=["std", "json", "kv", "print"])
p.add_argument("--workdir", default="/tmp/rr124hf_work")
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=45900)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--tqdm-bar", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.05)
args = p.parse_args()

FEAT = 16


class RankFilter(logging.Filter):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def filter(self, record):
        record.rank = self.rank
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record):
        d = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + ".%03dZ" % record.msecs,
             "level": record.levelname, "logger": record.name, "rank": record.rank,
             "pid": record.process, "msg": record.getMessage()}
        if record.exc_info:
            d["exc"] = self.formatException(record.exc_info)
        return json.dumps(d)


def setup_logging(rank):
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    h = logging.StreamHandler(sys.stdout)
    h.addFilter(RankFilter(rank))
    if args.style == "std":
        h.setFormatter(logging.Formatter('%(asctime)s [%(process)d] r%(rank)s %(levelname)s %(name)s: %(message)s'))
    elif args.style == "json":
        h.setFormatter(JsonFormatter())
    elif args.style == "kv":
        h.setFormatter(logging.Formatter('ts=%(asctime)s host=node0 rank=%(rank)s level=%(levelname)s logger=%(name)s msg="%(message)s"'))
    else:
        h.setFormatter(logging.Formatter('[rank%(rank)s] %(levelname)s %(message)s'))
    root.handlers[:] = [h]
    logging.captureWarnings(True)


class ShardDataset(Dataset):
    """Synthetic regression shard; some shards come from a second export."""

    def __init__(self, rank, n=512):
        g = torch.Generator().manual_seed(1234 + rank)
        self.x = torch.randn(n, FEAT, generator=g)
        w = torch.linspace(-1, 1, FEAT)
        self.y = (self.x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
        self.rank = rank
        self.records = None
        if args.fault == "dlworker" and rank == args.fault_rank:
            # shard re-exported with a metadata column that is sometimes null
            self.records = [{"x": self.x[i], "y": self.y[i], "meta": ({"src": "v2"} if i not in (58, 317, 401) else None)} for i in range(n)]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.records is not None:
            r = self.records[i]
            src = r["meta"]["src"]
            return {"features": r["x"], "labels": r["y"], "src": src}
        return {"features": self.x[i], "labels": self.y[i], "src": "v1"}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(FEAT, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.head = nn.Linear(64, 1)
        self.aux_head = nn.Linear(64, 1)

    def forward(self, x, use_aux=True):
        h = self.enc(x)
        out = self.head(h)
        if use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def main(local_rank=None, spawn_world=None):
    if spawn_world:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        rank, world = local_rank, spawn_world
    else:
        rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    setup_logging(rank)
    log = logging.getLogger("train")
    dlog = logging.getLogger("train.data")
    mlog = logging.getLogger("train.metrics")
    os.makedirs(args.workdir, exist_ok=True)

    if args.fault == "allocas" and rank == args.fault_rank:
        import resource
        # per-process address-space cap from the job spec (ulimit -v 3G)
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        log.debug("RLIMIT_AS=%s", resource.getrlimit(resource.RLIMIT_AS))

    log.info("starting rank=%d world=%d pid=%d torch=%s", rank, world, os.getpid(), torch.__version__)
    log.debug("env MASTER_ADDR=%s MASTER_PORT=%s LOCAL_RANK=%s", os.environ.get("MASTER_ADDR"),
              os.environ.get("MASTER_PORT"), os.environ.get("LOCAL_RANK", local_rank))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
        log.info("process group ready backend=%s", dist.get_backend())
    torch.manual_seed(0)
    model = Net()
    ddp_kwargs = {}
    if args.fault == "none-unused":
        ddp_kwargs["find_unused_parameters"] = True
    net = DDP(model, **ddp_kwargs) if world > 1 else model
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps + 5)
    scaler = None
    if args.fault == "none-amp":
        # config written for the GPU cluster; on this CPU box the scaler and autocast disable themselves
        scaler = torch.cuda.amp.GradScaler()
    if args.fault == "none-sched":
        sched.step()  # warm-up bookkeeping done too early (classic warning)
    ds = ShardDataset(rank)
    sampler = None
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    it = iter(dl)
    dlog.debug("dataloader built len=%d workers=%d", len(dl), args.workers)
    if args.fault == "sqlite":
        db = sqlite3.connect(os.path.join(args.workdir, "metrics.sqlite"), timeout=1.0)
        db.execute("CREATE TABLE IF NOT EXISTS m(step INT, rank INT, loss REAL)")
        db.commit()
    if args.fault in ("sigkill", "dlkill") and rank == args.fault_rank:
        with open(os.path.join(args.workdir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    leaked = []
    bar = None
    if args.tqdm_bar and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        try:
            batch = next(it)
        except StopIteration:
            it = iter(dl)
            batch = next(it)
        x, y = batch["features"], batch["labels"]
        dlog.debug("step=%d fetched batch shape=%s src=%s", step, tuple(x.shape), batch["src"][0])
        hit = rank == args.fault_rank and step >= args.fault_step

        if args.fault == "shape" and hit:
            # second export of this shard carries one extra feature column
            x = torch.cat([x, torch.ones(x.shape[0], 1)], dim=1)
        if args.fault == "keyerror" and hit:
            batch = {"inputs": x, "targets": y}  # v2 schema of the shard
            x, y = batch["features"], batch["labels"]
        if args.fault == "nofile" and rank == args.fault_rank:
            # per-step shard index cache opened and never closed
            for k in range(16):
                fn = os.path.join(args.workdir, f"idx_r{rank}_{k}.bin")
                if not os.path.exists(fn):
                    with open(fn, "wb") as fh:
                        fh.write(b"\0" * 64)
                leaked.append(open(fn, "rb"))
        if args.fault == "sigkill" and rank == args.fault_rank and step == args.fault_step:
            time.sleep(5)

        use_aux = True
        if (args.fault == "unused" and hit) or (args.fault == "unused-all" and step >= args.fault_step):
            use_aux = False  # aux head disabled when the shard has no aux targets
        if args.fault == "none-amp":
            with torch.autocast("cuda", dtype=torch.float16):
                out = net(x, use_aux=use_aux) if world > 1 else net(x, use_aux)
        else:
            out = net(x, use_aux=use_aux) if world > 1 else net(x, use_aux)
        if args.fault == "anomaly":
            torch.autograd.set_detect_anomaly(True)  # debug config flag, on everywhere
            # auxiliary log-space loss on a positive target (price-like); shard v2 marks missing targets as -1
            y_pos = y.exp()
            if hit:
                y_pos[3] = -1.0
            aux = ((torch.log(nn.functional.softplus(out)) - torch.log(y_pos)) ** 2).mean()
            loss = nn.functional.mse_loss(out, y) + 0.01 * aux
        else:
            loss = nn.functional.mse_loss(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.fault == "none-clip":
            gn = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0, error_if_nonfinite=False)
        opt.step()
        sched.step()

        if args.fault == "allocas" and hit:
            # eval cache: keep activations for every sample of the epoch
            cache = torch.empty(len(ds) * 4096, 1024, dtype=torch.float32)
            cache.zero_()
        if args.fault == "mismatch" and step == args.fault_step:
            # per-bucket error histogram: number of buckets taken from the local data range
            nb = int(y.max().item() * 4) + 8 if rank == args.fault_rank else 8
            hist = torch.histc((out - y).detach().abs(), bins=nb, min=0, max=4)
            dist.all_reduce(hist)
            log.info("error hist %s", hist.tolist())
        if args.fault == "sqlite":
            if rank == 0 and step == args.fault_step:
                db.execute("BEGIN EXCLUSIVE")
                db.execute("INSERT INTO m VALUES (?,?,?)", (step, rank, loss.item()))
                time.sleep(4)  # validation pass inside the open transaction
                db.commit()
            elif not (rank == 0 and step == args.fault_step):
                if step == args.fault_step:
                    time.sleep(0.5)
                db.execute("INSERT INTO m VALUES (?,?,?)", (step, rank, loss.item()))
                db.commit()
        if args.fault == "fifo" and rank == args.fault_rank and step == args.fault_step:
            fifo = os.path.join(args.workdir, "control.fifo")
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            log.info("reading control message from %s", fifo)
            with open(fifo) as fh:  # blocks: nobody ever opens the writer side
                fh.read()
        if args.fault == "fifo" and step == args.fault_step:
            dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)

        lt = loss.detach().clone()
        if world > 1:
            dist.all_reduce(lt)
            lt /= world
        lr = sched.get_last_lr()[0]
        if args.style == "json":
            print(json.dumps({"event": "metrics", "rank": rank, "step": step, "loss": round(loss.item(), 5),
                              "loss_avg": round(lt.item(), 5), "lr": lr, "elapsed": round(time.time() - t0, 3)}), flush=True)
        else:
            mlog.info("step %d/%d loss=%.5f loss_avg=%.5f lr=%.3e samples/s=%.1f", step, args.steps, loss.item(),
                      lt.item(), lr, step * 16 / (time.time() - t0))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{lt.item():.4f}")
        if step % 10 == 0 and rank == 0:
            ck = args.ckpt_dir or os.path.join(args.workdir, "ckpt")
            os.makedirs(ck, exist_ok=True)
            path = os.path.join(ck, f"step{step:05d}.pt")
            if args.fault in ("diskfull", "fsize", "readonly") and step >= args.fault_step:
                # checkpoint written through a python file object (buffered) so partial writes surface
                with open(path, "wb") as fh:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, fh)
                    fh.write(np.random.bytes(8 << 20))  # also stash the EMA shadow weights blob
            else:
                torch.save({"model": model.state_dict(), "step": step}, path)
            log.info("saved checkpoint %s", path)
        if world > 1 and step % 10 == 0:
            dist.barrier()
        time.sleep(args.step_sleep)
    if bar is not None:
        bar.close()
    log.info("training done in %.1fs", time.time() - t0)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
