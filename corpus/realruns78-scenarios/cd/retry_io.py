"""DDP training with I/O retry logic: flaky shard reads, checkpoint uploads, lock files, tracking DB.

--fault selects what happens on --fault-rank at --fault-step.
"""
import argparse, logging, os, shutil, socket, sqlite3, sys, time, threading
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "flaky_read", "read_exhausted", "upload_retry", "upload_devfull",
                        "upload_refused", "stale_lock", "db_locked"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--workdir", default="/tmp/rr78cd_io")
p.add_argument("--ckpt-every", type=int, default=4)
p.add_argument("--lock-hold", type=float, default=60)
p.add_argument("--lock-retries", type=int, default=1)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")
uplog = logging.getLogger("ckpt_sync")

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)
shards = os.path.join(args.workdir, "shards")
remote = os.path.join(args.workdir, "remote_bucket")
if rank == 0:
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(shards)
    for r in range(world):
        for i in range(args.steps + 2):
            if args.fault in ("flaky_read", "read_exhausted") and i == args.fault_step and r == args.fault_rank:
                continue  # this shard is produced late by the prefetch job
            torch.save({"x": torch.randn(16, 32), "y": torch.randint(0, 4, (16,))},
                       os.path.join(shards, f"part-{r:02d}-{i:05d}.pt"))
    if args.fault != "upload_retry":
        os.makedirs(remote)
dist.barrier()

if args.fault == "flaky_read" and rank == args.fault_rank:
    def _late_writer():
        time.sleep(2.5)
        tmp = os.path.join(shards, f".part-{rank:02d}-{args.fault_step:05d}.pt.tmp")
        torch.save({"x": torch.randn(16, 32), "y": torch.randint(0, 4, (16,))}, tmp)
        os.replace(tmp, os.path.join(shards, f"part-{rank:02d}-{args.fault_step:05d}.pt"))
    threading.Thread(target=_late_writer, daemon=True).start()
if args.fault == "upload_retry" and rank == 0:
    def _late_mount():
        time.sleep(3.0)
        os.makedirs(remote, exist_ok=True)
    threading.Thread(target=_late_mount, daemon=True).start()


def read_shard(i, retries=3, backoff=1.5):
    path = os.path.join(shards, f"part-{rank:02d}-{i:05d}.pt")
    for attempt in range(1, retries + 1):
        try:
            return torch.load(path)
        except OSError:
            if attempt == retries:
                raise
            log.warning("read of %s failed (attempt %d/%d), retrying in %.1fs", path, attempt, retries, backoff,
                        exc_info=True)
            time.sleep(backoff)
            backoff *= 2


def upload(local, retries=3):
    """Copy checkpoint to the remote bucket (mounted path or http endpoint)."""
    for attempt in range(1, retries + 1):
        try:
            if args.fault == "upload_refused":
                with socket.create_connection(("127.0.0.1", 36197), timeout=2) as s:
                    s.sendall(open(local, "rb").read())
            elif args.fault == "upload_devfull":
                dst = os.path.join(remote, os.path.basename(local))
                if not os.path.lexists(dst):
                    os.symlink("/dev/full", dst)  # bucket mount backed by a full volume
                with open(local, "rb") as fi, open(dst, "wb") as fo:
                    shutil.copyfileobj(fi, fo)
                    fo.flush(); os.fsync(fo.fileno())
            else:
                shutil.copy2(local, os.path.join(remote, os.path.basename(local)))
            uplog.info("uploaded %s (attempt %d)", os.path.basename(local), attempt)
            return
        except OSError:
            if attempt == retries:
                uplog.error("giving up on %s after %d attempts", local, retries)
                raise
            uplog.exception("upload of %s failed (attempt %d/%d); will retry", local, attempt, retries)
            time.sleep(2.0)


model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
lossf = nn.CrossEntropyLoss()

db = None
if args.fault == "db_locked" and rank == 0:
    dbpath = os.path.join(args.workdir, "runs.sqlite")
    c = sqlite3.connect(dbpath); c.execute("create table metrics(step int, loss real)"); c.commit(); c.close()
    # a stale dashboard process still holds a write transaction on the tracking DB
    import subprocess
    holder = subprocess.Popen([sys.executable, "-c",
        "import sqlite3,time;c=sqlite3.connect(%r,isolation_level=None);c.execute('begin exclusive');"
        "c.execute('insert into metrics values(-1,0)');time.sleep(60)" % dbpath])
    time.sleep(1.0)
    db = sqlite3.connect(dbpath, timeout=3.0)
if args.fault == "stale_lock" and rank == args.fault_rank:
    import subprocess
    lockp = os.path.join(args.workdir, "ckpt.lock")
    holder = subprocess.Popen([sys.executable, "-c",
        "import fcntl,time;f=open(%r,'a');fcntl.flock(f,fcntl.LOCK_EX);time.sleep(%s)" % (lockp, args.lock_hold)])
    time.sleep(1.0)

log.info("world_size=%d steps=%d fault=%s", world, args.steps, args.fault)
for step in range(args.steps):
    batch = read_shard(step)
    out = model(batch["x"])
    loss = lossf(out, batch["y"])
    opt.zero_grad(); loss.backward(); opt.step()
    l = loss.detach().clone(); dist.all_reduce(l); l /= world
    if rank == 0:
        log.info("step %d loss %.4f lr %.1e", step, l.item(), opt.param_groups[0]["lr"])
        if db is not None and step == args.fault_step:
            db.execute("insert into metrics values(?,?)", (step, l.item())); db.commit()
    if (step + 1) % args.ckpt_every == 0:
        if args.fault == "stale_lock" and rank == args.fault_rank:
            from filelock import FileLock, Timeout
            for attempt in range(1, args.lock_retries + 1):
                try:
                    with FileLock(os.path.join(args.workdir, "ckpt.lock"), timeout=5):
                        log.info("acquired checkpoint lock")
                    break
                except Timeout:
                    if attempt == args.lock_retries:
                        raise
                    log.exception("checkpoint lock busy (attempt %d/%d), retrying", attempt, args.lock_retries)
        if rank == 0:
            local = os.path.join(args.workdir, f"ckpt-{step+1:06d}.pt")
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step + 1}, local)
            log.info("saved %s", local)
            if args.fault in ("upload_retry", "upload_devfull", "upload_refused"):
                upload(local)
        dist.barrier()
dist.barrier()
if rank == 0:
    log.info("training finished: %d steps", args.steps)
dist.destroy_process_group()
