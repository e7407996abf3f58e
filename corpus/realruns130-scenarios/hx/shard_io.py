"""Per-rank data shards and per-rank checkpoints, DDP over gloo (CPU).

Subcommands:
  prep   --data DIR --world N [--fault ...]   write jsonl shards (faults baked into the data)
  train  --data DIR --ckpt DIR [...]          train; each rank reads data/shard_<rank>/ and saves ckpt/rank<rank>/
Faults at train time come from the environment the run is given (ulimits, mounts,
permissions) or from the data / checkpoints prepared beforehand.
"""
import argparse, os, sys, json, glob, time, datetime, logging, random, sqlite3

p = argparse.ArgumentParser()
p.add_argument("cmd", choices=["prep", "train"])
p.add_argument("--data", default="tmp/data")
p.add_argument("--ckpt", default="tmp/ckpt")
p.add_argument("--world", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--parts", type=int, default=4)
p.add_argument("--rows", type=int, default=64)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--save-every", type=int, default=6)
p.add_argument("--resume", action="store_true")
p.add_argument("--keep-open", action="store_true", help="cache open file handles per part (fast random access)")
p.add_argument("--metrics-db", default="")
p.add_argument("--tag-from-files", action="store_true")
p.add_argument("--consolidate", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--scale", default="1.0")
p.add_argument("--worker-sleep", type=float, default=0.0)
p.add_argument("--save-args", action="store_true")
p.add_argument("--cache-dir", default="")
p.add_argument("--tmp-dir", default="")
p.add_argument("--save-wrapped", action="store_true")
args = p.parse_args()


def prep():
    random.seed(0)
    for r in range(args.world):
        if args.fault == "missing-shard" and r == args.fault_rank:
            continue  # the copy job for this shard never ran
        d = os.path.join(args.data, f"shard_{r}")
        os.makedirs(d, exist_ok=True)
        parts = args.parts
        if args.fault in ("many-parts", "long-names") and r == args.fault_rank:
            parts = args.parts * 25
        for k in range(parts):
            fn = os.path.join(d, f"part-{k:05d}-of-{parts:05d}.jsonl")
            if args.fault == "long-names" and r == args.fault_rank:
                fn = os.path.join(d, f"cc-2024-10-en-dedup-minhash-p{k:05d}.jsonl")
            with open(fn, "w") as f:
                for i in range(args.rows // parts + 1):
                    rec = {"x": [round(random.gauss(0, 1), 4) for _ in range(8)], "y": random.randrange(4)}
                    if args.fault == "weighted" and r == args.fault_rank and i % 5 == 0:
                        rec["weight"] = "0.5"
                    line = json.dumps(rec)
                    if args.fault == "corrupt-line" and r == args.fault_rank and k == 1 and i == 7:
                        line = line[: len(line) // 2]  # record cut off by an interrupted upload
                    f.write(line + "\n")
    print(f"prepared shards in {args.data}")


def train():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.distributed as dist
    from torch.utils.data import Dataset, DataLoader
    from torch.utils.data.distributed import DistributedSampler

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
    log = logging.getLogger("shard_io")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)

    class JsonlShard(Dataset):
        def __init__(self, d, scale, keep_open):
            self.files = sorted(glob.glob(os.path.join(d, "*.jsonl")))
            if not self.files and not os.path.isdir(d):
                open(os.path.join(d, "part-00000.jsonl"))  # raise the real error for the missing dir
            self.index = []
            self.handles = {}
            self.keep_open = keep_open
            for fi, fn in enumerate(self.files):
                f = open(fn)
                off = 0
                for line in f:
                    self.index.append((fi, off))
                    off += len(line.encode())
                if keep_open:
                    self.handles[fi] = f
                else:
                    f.close()
            self.scale = scale

        def __len__(self):
            return len(self.index)

        def __getitem__(self, i):
            fi, off = self.index[i]
            if self.keep_open:
                f = self.handles[fi]
                f.seek(off)
                line = f.readline()
            else:
                with open(self.files[fi]) as f:
                    f.seek(off)
                    line = f.readline()
            if args.worker_sleep:
                time.sleep(args.worker_sleep)
            rec = json.loads(line)
            x = torch.tensor(rec["x"])
            w = 1.0
            if "weight" in rec:
                w = float(rec["weight"]) * self.scale
            return x, torch.tensor(rec["y"]), torch.tensor(w)

    shard_dir = os.path.join(args.data, f"shard_{rank}")
    if args.cache_dir:
        # shared feature-statistics cache: first rank to get the lock builds it
        import fcntl
        os.makedirs(args.cache_dir, exist_ok=True)
        lockf = open(os.path.join(args.cache_dir, ".stats.lock"), "w")
        if rank != 0:
            time.sleep(1.5)
        fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB)
        stats_path = os.path.join(args.cache_dir, "feature_stats.json")
        if not os.path.exists(stats_path):
            log.info("building feature statistics cache %s", stats_path)
            time.sleep(5)
            with open(stats_path, "w") as f:
                json.dump({"mean": [0.0] * 8, "std": [1.0] * 8}, f)
        fcntl.flock(lockf, fcntl.LOCK_UN)
        log.info("feature statistics ready")
    ds = JsonlShard(shard_dir, args.scale, args.keep_open)
    log.info("loaded %d records from %d files in %s", len(ds), len(ds.files), shard_dir)
    dl = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0)

    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ckdir = os.path.join(args.ckpt, f"rank{rank}")
    start_step = 0
    if args.resume:
        path = os.path.join(ckdir, "state.pt")
        log.info("resuming from %s", path)
        st = torch.load(path)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optim"])
        start_step = st["step"]
        log.info("resumed at step %d", start_step)
    ddp = nn.parallel.DistributedDataParallel(model)

    db = None
    if args.metrics_db:
        db = sqlite3.connect(args.metrics_db, timeout=2.0)
        if rank == 0:
            db.execute("CREATE TABLE IF NOT EXISTS metrics (step INT, rank INT, loss REAL)")
            db.commit()
        dist.barrier()

    n = torch.tensor([len(dl)])
    dist.all_reduce(n, op=dist.ReduceOp.MIN)  # equal step count on every rank
    step = start_step
    for ep in range(args.epochs):
        for bi, (x, y, w) in enumerate(dl):
            if bi >= n.item():
                break
            out = ddp(x)
            loss = (F.cross_entropy(out, y, reduction="none") * w).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 3 == 0:
                log.info("epoch %d step %d loss %.4f", ep, step, loss.item())
            if db is not None:
                if rank == 0 and step == 5:
                    # export a snapshot of the table for the dashboard (holds the write lock)
                    db.execute("BEGIN EXCLUSIVE")
                    rows = db.execute("SELECT * FROM metrics").fetchall()
                    time.sleep(6)
                    db.commit()
                    log.info("exported %d metric rows", len(rows))
                db.execute("INSERT INTO metrics VALUES (?,?,?)", (step, rank, loss.item()))
                db.commit()
            if step % args.save_every == 0:
                os.makedirs(ckdir, exist_ok=True)
                tag = "state"
                if args.tag_from_files:
                    tag = "state-" + "+".join(os.path.basename(f)[:-6] for f in ds.files)
                st = {"model": (ddp if args.save_wrapped else model).state_dict(), "optim": opt.state_dict(), "step": step,
                      "rng": torch.get_rng_state()}
                if args.save_args:
                    st["args"] = args
                if args.consolidate and rank == 0:
                    # keep a consolidated copy with the data order for exact resume
                    st["data_order"] = torch.randperm(len(ds) * 20000)
                path = os.path.join(ckdir, tag + ".pt")
                tmp_path = (os.path.join(args.tmp_dir, f"rank{rank}-{tag}.pt.partial")
                            if args.tmp_dir else path + ".tmp")
                with open(tmp_path, "wb") as f:
                    torch.save(st, f)
                os.replace(tmp_path, path)
                log.info("saved checkpoint %s", path)
                dist.barrier()
    t = torch.tensor([loss.item()])
    dist.all_reduce(t)
    log.info("finished %d steps, mean loss %.4f", step, t.item() / world)
    dist.destroy_process_group()


if __name__ == "__main__":
    prep() if args.cmd == "prep" else train()
