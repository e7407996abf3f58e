"""Regression trainer launched with torch.multiprocessing.spawn, logging through loguru (colorized).

--fault none | np_oom | backward_twice | weights_only | bn_last_batch | sqlite_metrics | ckpt_fsize
--rank selects the faulty rank where it applies. --nprocs 1 runs a single process without spawn.
"""
import argparse, datetime, os, sqlite3, sys, time, warnings

sys.path.insert(0, "/work/rr85/cz/venv-extra")
from loguru import logger
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--port", type=int, default=37520)
p.add_argument("--n-samples", type=int, default=96)
p.add_argument("--resume", default="")
p.add_argument("--json", action="store_true", help="loguru serialize=True (JSON lines)")
args = p.parse_args()

FMT = ("<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | "
       "<magenta>rank={extra[rank]}</magenta> | <cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - <level>{message}</level>")


def setup_log(rank):
    logger.remove()
    if args.json:
        logger.add(sys.stdout, serialize=True, level="INFO")
    else:
        logger.add(sys.stderr, format=FMT, colorize=True, level="INFO", backtrace=False, diagnose=False)
    return logger.bind(rank=rank)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 32)
        self.bn = nn.BatchNorm1d(32)
        self.l2 = nn.Linear(32, 1)

    def forward(self, x):
        return self.l2(F.relu(self.bn(self.l1(x))))


def worker(rank, world):
    log = setup_log(rank)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    log.info("worker up (pid {}), world_size={}", os.getpid(), world)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(100 + rank)
    n = args.n_samples
    if args.fault == "bn_last_batch" and rank == args.rank:
        n += 1  # this rank's shard got the remainder sample
    X = torch.randn(n, 8, generator=g)
    Y = X.sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    model = Net()
    if args.resume:
        log.info("resuming from {}", args.resume)
        ck = torch.load(args.resume)
        model.load_state_dict(ck["model"])
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    db = None
    if args.fault == "sqlite_metrics":
        # every rank appends its metrics to the shared run database
        db = sqlite3.connect("/work/rr85/cz/tmp/runs.sqlite", timeout=2)
        db.execute("create table if not exists metrics(step int, rank int, loss real)")
        db.commit()
    bs = 16
    steps_per_epoch = (n + bs - 1) // bs
    running = 0.0
    for step in range(args.steps):
        i = (step % steps_per_epoch) * bs
        xb, yb = X[i:i + bs], Y[i:i + bs]
        if args.fault == "np_oom" and rank == args.rank and step == 5:
            log.info("building hard-negative bank from {} candidates", 1 << 31)
            bank = np.zeros((1 << 31, 8), dtype=np.float32)
        out = model(xb)
        loss = F.mse_loss(out, yb)
        if args.fault == "backward_twice":
            running = running + loss  # keep a running loss for logging
            running.backward()
        else:
            loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 3 == 0:
            log.info("step {:>3} | loss {:.4f} | batch {}", step, loss.item(), xb.shape[0])
        if step == 4 and rank == 0:
            log.warning("learning rate 1e-2 is high for Adam on this model; consider 1e-3")
        if db is not None:
            with db:
                db.execute("insert into metrics values (?,?,?)", (step, rank, loss.item()))
                if rank == 0 and step == 2:
                    log.info("compacting metrics table")
                    time.sleep(4)  # long write transaction (vacuum of old runs)
        time.sleep(0.1)
    if rank == 0:
        os.makedirs("/work/rr85/cz/tmp/ckpt", exist_ok=True)
        path = "/work/rr85/cz/tmp/ckpt/loguru-last.pt"
        state = {"model": (model.module if world > 1 else model).state_dict(), "args": args, "step": args.steps}
        if args.fault == "ckpt_fsize":
            cache = "/work/rr85/cz/tmp/ckpt/embedding-cache.npy"
            log.info("writing embedding cache {}", cache)
            emb = np.random.default_rng(0).standard_normal((64, 1024, 128)).astype(np.float32)
            with open(cache, "wb") as f:
                for chunk in np.array_split(emb, 16):
                    f.write(chunk.tobytes())
        log.info("saving checkpoint to {}", path)
        torch.save(state, path)
        log.success("checkpoint saved ({} bytes)", os.path.getsize(path))
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log.info("finished")


def run(rank, world):
    log = setup_log(rank)
    try:
        worker(rank, world)
    except Exception:
        log.exception("rank {} failed", rank)
        raise


if __name__ == "__main__":
    if args.nprocs == 1:
        run(0, 1)
    else:
        mp.spawn(run, args=(args.nprocs,), nprocs=args.nprocs, join=True)
