"""Tiny token-classifier trained with DDP over gloo on per-rank data shards.

Usage: python gloo_ddp.py --data-dir D [--ckpt-dir C] [--steps N] [--style print|logging|tqdm]
       [--fault KIND --fault-rank R --fault-step S]
Shards are built with --make-data; faults are mostly induced by what is on disk, the rest by the flags.
"""
import argparse, json, logging, os, sys, time, math, warnings, faulthandler
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data")
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--style", default="print")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--loader-timeout", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=15)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=-1)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--eval-every", type=int, default=10)
p.add_argument("--resume", default=None)
p.add_argument("--make-data", action="store_true")
p.add_argument("--world", type=int, default=3)
p.add_argument("--vocab", type=int, default=500)
p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=49050)
p.add_argument("--slow", type=float, default=0.0)
p.add_argument("--step-time", type=float, default=0.03)
p.add_argument("--epochs", type=int, default=0)
p.add_argument("--sync", default="none")
p.add_argument("--cosine", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--metrics-db", default=None)
p.add_argument("--db-timeout", type=float, default=5.0)
p.add_argument("--watchdog", type=float, default=0)
p.add_argument("--cache-lock", type=float, default=0)
args = p.parse_args()

SEQ, NCLS = 16, 5

def make_data():
    os.makedirs(args.data_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    for r in range(args.world):
        n = 400
        x = rng.integers(0, args.vocab, size=(n, SEQ)).astype(np.int64)
        y = (x[:, 0] % NCLS).astype(np.int64)
        np.save(f"{args.data_dir}/shard-{r:05d}.tokens.npy", x)
        np.save(f"{args.data_dir}/shard-{r:05d}.labels.npy", y)
        meta = {"vocab_size": args.vocab, "label_map": {str(i): i for i in range(NCLS)}, "num_rows": n}
        json.dump(meta, open(f"{args.data_dir}/shard-{r:05d}.meta.json", "w"))
        v = rng.integers(0, args.vocab, size=(64, SEQ)).astype(np.int64)
        np.save(f"{args.data_dir}/val-{r:05d}.tokens.npy", v)
        np.save(f"{args.data_dir}/val-{r:05d}.labels.npy", (v[:, 0] % NCLS).astype(np.int64))
    print("wrote", args.world, "shards to", args.data_dir)

class Shard(Dataset):
    def __init__(self, prefix):
        self.meta = json.load(open(prefix + ".meta.json"))
        self.x = np.load(prefix + ".tokens.npy")
        self.y = np.load(prefix + ".labels.npy")
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        lab = self.meta["label_map"][str(int(self.y[i]))]
        if args.slow and dist.is_available():
            time.sleep(args.slow)
        return torch.from_numpy(self.x[i]), torch.tensor(lab)

class Net(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, NCLS))
    def forward(self, x):
        return self.ff(self.emb(x).mean(1))

def main(rank=None, world=None):
    if rank is not None:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        log = (lambda m: print(m, flush=True)) if args.style == "print" else (lambda m: None)
    F = lambda kind: args.fault == kind and rank == args.fault_rank
    ds = Shard(f"{args.data_dir}/shard-{rank:05d}")
    vocab = ds.meta["vocab_size"]
    log(f"rank {rank}/{world}: shard rows={len(ds)} vocab={vocab}")
    hidden = int(os.environ.get("MODEL_HIDDEN", args.hidden))
    if args.cache_lock:
        from filelock import SoftFileLock
        lock = SoftFileLock(os.path.join(args.data_dir, f"shard-{rank:05d}.cache.lock"), timeout=args.cache_lock)
        with lock:
            log(f"building token-count cache for shard {rank}")
            np.save(os.path.join(args.data_dir, f"shard-{rank:05d}.counts.npy"), np.bincount(ds.x.ravel(), minlength=vocab))
    model = Net(vocab, hidden)
    if args.resume:
        sd = torch.load(os.path.join(args.resume, f"model_rank{rank}.pt") if F("own_ckpt") else os.path.join(args.resume, "model.pt"), map_location="cpu")
        model.load_state_dict(sd["model"])
        rng = torch.load(os.path.join(args.resume, f"rng_state_{rank}.pth"), weights_only=False)
        torch.set_rng_state(rng["torch"]); np.random.set_state(rng["numpy"])
        log(f"resumed from {args.resume} step {sd['step']}")
    model = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = None
    if args.cosine:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
        sched.step()  # warm start of the schedule
    dl = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers, drop_last=True,
                    timeout=args.loader_timeout, persistent_workers=args.workers > 0)
    it = iter(dl)
    bar = None
    if args.style == "tqdm":
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"rank{rank}", position=rank, leave=True, file=sys.stderr, mininterval=0.5)
    last = [time.time()]
    if args.watchdog:
        import threading
        def wd():
            fired = False
            while True:
                time.sleep(1)
                if not fired and time.time() - last[0] > args.watchdog:
                    print(f"[rank{rank}] watchdog: no step finished for {time.time()-last[0]:.0f}s, dumping stacks", file=sys.stderr, flush=True)
                    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                    fired = True
        threading.Thread(target=wd, daemon=True).start()
    t0 = time.time()
    def batches():
        nonlocal it
        if args.epochs:
            s = 0
            for ep in range(args.epochs):
                for b in dl:
                    s += 1; yield s, b
                log(f"epoch {ep} done ({s} steps)")
            return
        for s in range(1, args.steps + 1):
            try:
                b = next(it)
            except StopIteration:
                it = iter(dl); b = next(it)
            yield s, b
    for step, (xb, yb) in batches():
        time.sleep(args.step_time)
        if F("stall") and step == args.fault_step:
            # waits for a sentinel file another job was supposed to write
            while not os.path.exists(os.path.join(args.data_dir, "READY")):
                time.sleep(1)
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        if sched: sched.step()
        last[0] = time.time()
        if bar: bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 5 == 0:
            log(f"step {step} loss {loss.item():.4f} lr 3.0e-03 {(time.time()-t0)/step:.3f}s/it")
        if step % args.eval_every == 0:
            if F("stall_eval"):
                # val set is produced by a separate export job; wait until it says it is done
                while not os.path.exists(os.path.join(args.data_dir, "VAL_READY")):
                    time.sleep(1)
            if args.sync == "monitored":
                dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
            vx = np.load(f"{args.data_dir}/val-{rank:05d}.tokens.npy"); vy = np.load(f"{args.data_dir}/val-{rank:05d}.labels.npy")
            with torch.no_grad():
                logits = model.module(torch.from_numpy(vx))
            preds = logits.argmax(-1)
            # gather predictions from every rank for the global metric
            gathered = [torch.zeros_like(preds) for _ in range(world)]
            dist.all_gather(gathered, preds)
            acc = torch.tensor([(preds == torch.from_numpy(vy)).float().mean().item()])
            dist.all_reduce(acc); acc /= world
            if args.metrics_db and rank == 0:
                import sqlite3
                con = sqlite3.connect(args.metrics_db, timeout=args.db_timeout)
                con.execute("CREATE TABLE IF NOT EXISTS metrics (run TEXT, step INT, name TEXT, value REAL)")
                con.execute("INSERT INTO metrics VALUES (?, ?, ?, ?)", ("gloo-ddp", step, "val_acc", acc.item()))
                con.commit(); con.close()
            log(f"eval step {step}: val_acc {acc.item():.4f} (gathered {sum(g.numel() for g in gathered)} preds)")
        if args.ckpt_dir and step % 10 == 0:
            if rank == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                with open(os.path.join(args.ckpt_dir, f"model-step{step}.pt"), "wb") as fh:
                    torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, fh)
                log(f"saved checkpoint {args.ckpt_dir}/model-step{step}.pt")
            dist.barrier()
            torch.save({"torch": torch.get_rng_state(), "numpy": np.random.get_state()}, os.path.join(args.ckpt_dir, f"rng_state_{rank}.pth"))
            dist.barrier()
    if bar: bar.close()
    log(f"rank {rank} finished {args.steps} steps in {time.time()-t0:.1f}s")
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.make_data:
        make_data(); sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
