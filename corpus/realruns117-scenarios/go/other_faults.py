"""Regression model with a few production features that can break:
--case onecycle : OneCycleLR sized from len(dataset)//batch_size while the loader keeps the last partial batch
--case whiten   : ZCA-style feature whitening via Cholesky of the batch covariance (DDP, torchrun)
--case sqlite   : per-step metrics written by every rank into one shared SQLite file (mp.spawn)
--case none     : same regression, healthy
"""
import argparse
import os
import sqlite3
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jlog  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--case", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--n", type=int, default=330)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--logfmt", default="plain")
p.add_argument("--db", default="runs/metrics.db")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", default="45060")
args = p.parse_args()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def make_data(seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(args.n, 6, generator=g)
    y = X @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0, 1.0]) + 0.1 * torch.randn(args.n, generator=g)
    return X, y


def onecycle():
    log = jlog.setup(args.logfmt, "reg")
    from torch.utils.data import DataLoader, TensorDataset
    from tqdm import tqdm
    X, y = make_data(0)
    ds = TensorDataset(X, y)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=True)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    steps_per_epoch = len(ds) // args.bs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps_per_epoch * args.epochs)
    log.info("OneCycleLR total_steps=%d (%d/epoch x %d epochs)", steps_per_epoch * args.epochs, steps_per_epoch, args.epochs)
    for ep in range(args.epochs):
        bar = tqdm(dl, desc=f"Epoch {ep + 1}/{args.epochs}", mininterval=0)
        for xb, yb in bar:
            loss = nn.functional.mse_loss(model(xb).squeeze(-1), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            bar.set_postfix(loss=f"{float(loss):.3f}", lr=f"{sched.get_last_lr()[0]:.4f}")
        log.info("epoch %d finished", ep + 1)
    log.info("done")


def whiten():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    log = jlog.setup(args.logfmt, "reg")
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank = dist.get_rank()
    X, y = make_data(rank)
    if rank == args.fault_rank:
        # this rank's shard comes from the sensor export where channel 3 duplicates channel 1
        X[:, 3] = X[:, 1]
    model = DDP(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    running = None
    for step in range(8):
        xb = X[step * args.bs:(step + 1) * args.bs]
        yb = y[step * args.bs:(step + 1) * args.bs]
        mu = xb.mean(0, keepdim=True)
        xc = xb - mu
        cov = xc.T @ xc / (xb.shape[0] - 1)
        running = cov if running is None else 0.9 * running + 0.1 * cov
        if step >= args.fault_step:
            L = torch.linalg.cholesky(running)
            xw = torch.linalg.solve_triangular(L, xc.T, upper=False).T
        else:
            xw = xc / xc.std(0, keepdim=True)
        loss = nn.functional.mse_loss(model(xw).squeeze(-1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f whitening=%s", step, float(loss), "cholesky" if step >= args.fault_step else "diag")
    log.info("done")
    dist.destroy_process_group()


def sqlite_worker(rank, world):
    import torch.distributed as dist
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)
    log = jlog.setup(args.logfmt, "reg")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=40))
    from torch.nn.parallel import DistributedDataParallel as DDP
    os.makedirs(os.path.dirname(args.db), exist_ok=True)
    con = sqlite3.connect(args.db, timeout=2.0, isolation_level="DEFERRED")
    if rank == 0:
        con.execute("CREATE TABLE IF NOT EXISTS metrics (run TEXT, rank INT, step INT, name TEXT, value REAL)")
        con.commit()
    dist.barrier()
    X, y = make_data(rank)
    model = DDP(nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(12):
        xb = X[step * args.bs:(step + 1) * args.bs]
        yb = y[step * args.bs:(step + 1) * args.bs]
        loss = nn.functional.mse_loss(model(xb).squeeze(-1), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        con.execute("INSERT INTO metrics VALUES (?,?,?,?,?)", ("run-117", rank, step, "loss", float(loss)))
        if rank == 0:
            # rank 0 also records the eval summary; committed once per "epoch" of 6 steps
            con.execute("INSERT INTO metrics VALUES (?,?,?,?,?)", ("run-117", rank, step, "lr", 1e-2))
            if step % 6 == 5:
                con.commit()
        else:
            con.commit()
        log.info("step %d loss %.4f", step, float(loss))
        time.sleep(0.5)
    con.commit()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.case == "onecycle":
        onecycle()
    elif args.case == "whiten":
        whiten()
    elif args.case == "sqlite":
        import torch.multiprocessing as mp
        mp.spawn(sqlite_worker, args=(args.nprocs,), nprocs=args.nprocs)
