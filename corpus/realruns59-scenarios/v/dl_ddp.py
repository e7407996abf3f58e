"""DDP training over a directory of .npy samples with a multi-worker DataLoader.
--fault selects a data-loading fault on --fault-rank at --fault-step."""
import argparse, glob, json, logging, os, sys, time, tempfile, shutil
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--n", type=int, default=256)
p.add_argument("--persistent", action="store_true")
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--logfmt", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=30001)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--ctx", default=None)
p.add_argument("--cache", default=None)
p.add_argument("--skip-bad", action="store_true", help="log and skip unreadable samples")
p.add_argument("--feat", type=int, default=16)
args = p.parse_args()

def make_data(root, n, fault, frank, world):
    os.makedirs(root, exist_ok=True)
    if glob.glob(os.path.join(root, "*.npy")) or glob.glob(os.path.join(root, "shard-*")):
        return
    rng = np.random.default_rng(0)
    meta = {}
    if fault == "emptyshard":
        for r in range(world):
            if r == frank: continue  # preprocessing job produced one shard too few
            d = os.path.join(root, f"shard-{r:02d}"); os.makedirs(d, exist_ok=True)
            for i in range(n // world):
                np.save(os.path.join(d, f"s{i:05d}.npy"), rng.standard_normal(17).astype(np.float32))
        return
    for i in range(n):
        x = rng.standard_normal(17).astype(np.float32)
        x[16] = i % 4
        np.save(os.path.join(root, f"s{i:05d}.npy"), x)
        meta[f"s{i:05d}"] = {"label": int(i % 4), "src": "crawl-v2"}
    with open(os.path.join(root, "meta.json"), "w") as f:
        json.dump(meta, f)

class NpyDataset(Dataset):
    def __init__(self, root, fault="none", transform=None):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        with open(os.path.join(root, "meta.json")) as f:
            self.meta = json.load(f)
        self.fault = fault
        self.transform = transform
        self.handles = []
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if getattr(args, "skip_bad", False):
            try:
                return self._get(i)
            except Exception:
                logging.getLogger("data").exception("skipping unreadable sample %s", self.files[i])
                return self._get((i + 1) % len(self.files))
        return self._get(i)
    def _get(self, i):
        path = self.files[i]
        if self.fault == "fdleak":
            fh = open(path, "rb")          # bug: handle kept for "fast re-reads", never closed
            self.handles.append(fh)
            x = np.load(fh)
            fh.seek(0)
        else:
            x = np.load(path)
        if self.fault == "slowfs" and os.path.exists(path + ".stall"):
            time.sleep(60)                   # read blocks on the stalled mount
        if self.fault == "segv" and os.path.exists(path + ".badhdr"):
            import ctypes
            hdr = int.from_bytes(open(path + ".badhdr", "rb").read(8), "little")
            ctypes.string_at(hdr, 64)        # native decoder follows the bogus header offset
        stem = os.path.splitext(os.path.basename(path))[0]
        y = self.meta[stem]["label"]
        t = torch.from_numpy(x[:16].copy() if x.shape[0] >= 16 else x.copy())
        if self.transform is not None:
            t = self.transform(t)
        if args.feat > 16:                   # augmentation: random-feature expansion
            t = torch.cat([t, torch.randn(args.feat - 16)])
        return t, y

class ShardDataset(Dataset):
    def __init__(self, root, rank):
        self.files = sorted(glob.glob(os.path.join(root, f"shard-{rank:02d}", "*.npy")))
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        x = np.load(self.files[i]); return torch.from_numpy(x[:16]), int(x[16] > 0)

def worker_init(wid):
    if args.fault == "seedinit":
        # per-worker augmentation seed (common recipe)
        np.random.seed(torch.initial_seed())
    d = os.environ.get("WORKER_PIDFILE_DIR")
    if d:
        r = os.environ.get("RANK", "0")
        with open(os.path.join(d, f"rank{r}-worker{wid}.pid"), "w") as f:
            f.write(str(os.getpid()))

def _entry(r, w):
    main(r, w)

def plant(root, fault, frank, fstep, world, bs, n):
    """Reproduce the bad sample exactly where the cluster job hit it: the sample that
    DistributedSampler(seed=0, epoch 0) hands to rank `frank` in batch `fstep`."""
    files = sorted(glob.glob(os.path.join(root, "*.npy")))
    if world > 1:
        idx = list(DistributedSampler(files, num_replicas=world, rank=frank, shuffle=True, seed=0))
    else:
        idx = list(range(len(files)))
    path = files[idx[fstep * bs + 3]]
    stem = os.path.splitext(os.path.basename(path))[0]
    if fault == "keyerror":   # sample added after meta.json was generated
        m = json.load(open(os.path.join(root, "meta.json"))); m.pop(stem); json.dump(m, open(os.path.join(root, "meta.json"), "w"))
    elif fault == "truncated":  # partial copy from the object store
        data = open(path, "rb").read(); open(path, "wb").write(data[: len(data) - 37])
    elif fault == "collate":  # re-exported with the old 12-feature schema
        np.save(path, np.random.default_rng(1).standard_normal(12).astype(np.float32))
    elif fault == "segv":
        open(path + ".badhdr", "wb").write((16).to_bytes(8, "little"))
    elif fault == "slowfs":
        open(path + ".stall", "w").write("x")

def main(rank=None, world=None):
    if rank is not None:
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if args.logfmt:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info if args.logfmt else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    if args.fault == "sampler_before_init":
        ds0 = None
    if distributed and args.fault != "sampler_before_init":
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if rank == 0:
        make_data(args.data, args.n, args.fault, args.fault_rank, world)
    if distributed and args.fault != "sampler_before_init":
        dist.barrier()
    # fault set-up that mirrors what happened on the cluster
    if args.fault in ("collate", "truncated", "segv", "slowfs", "keyerror") and rank == 0:
        plant(args.data, args.fault, args.fault_rank, args.fault_step, world, args.bs, args.n)
    if distributed and args.fault != "sampler_before_init":
        dist.barrier()
    if args.fault == "emptyshard":
        ds = ShardDataset(args.data, rank)
    elif args.fault == "pickle":
        scale = 0.5
        ds = NpyDataset(args.data, transform=lambda t: t * scale)
    else:
        ds = NpyDataset(args.data, fault=args.fault)
    say(f"dataset: {len(ds)} samples from {args.data}")
    if args.cache and rank == 0:
        # rank 0 materialises a preprocessed cache that all ranks then mmap
        xs = torch.stack([ds[i][0] for i in range(len(ds))]).repeat(64, 1)
        tmpdir = tempfile.mkdtemp(prefix="dscache-")
        tmpf = os.path.join(tmpdir, "features.f32")
        with open(tmpf, "wb") as fh:           # raw float32 rows, later np.memmap'ed by every rank
            for row in xs.numpy():
                fh.write(row.tobytes())
        say(f"wrote cache {tmpf} ({os.path.getsize(tmpf)/1e6:.1f} MB)")
        os.makedirs(args.cache, exist_ok=True)
        os.rename(tmpf, os.path.join(args.cache, "features.f32"))  # atomic publish
        say(f"published cache to {args.cache}")
    if args.fault == "sampler_before_init":
        sampler = DistributedSampler(ds, shuffle=True)
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    elif args.fault == "emptyshard":
        sampler = None
    else:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
    if distributed and args.cache:
        dist.barrier()
    kw = dict(batch_size=args.bs, num_workers=args.workers, worker_init_fn=worker_init, drop_last=True)
    if args.workers > 0:
        kw["persistent_workers"] = args.persistent
        if args.ctx: kw["multiprocessing_context"] = args.ctx
    if args.dl_timeout: kw["timeout"] = args.dl_timeout
    if sampler is not None: kw["sampler"] = sampler
    else: kw["shuffle"] = True
    dl = DataLoader(ds, **kw)
    model = nn.Sequential(nn.Linear(args.feat, 64), nn.ReLU(), nn.Linear(64, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    lossf = nn.CrossEntropyLoss()
    step = 0
    for ep in range(args.epochs):
        if sampler is not None and hasattr(sampler, "set_epoch"): sampler.set_epoch(ep)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", dynamic_ncols=False, ncols=90)
        t0 = time.time()
        for x, y in it:
            if args.fault == "deleted" and step == args.fault_step and rank == 0:
                # dataset "refresh" job removes superseded files while training still reads them
                for f in sorted(glob.glob(os.path.join(args.data, "s001*.npy"))):
                    os.remove(f)
            out = model(x); loss = lossf(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0 and not (args.tqdm and rank == 0):
                say(f"epoch {ep} step {step} loss {loss.item():.4f} {(time.time()-t0)/(step+1)*1000:.0f} ms/it")
            step += 1
            if step >= args.steps: break
        if step >= args.steps: break
    say(f"training done, {step} steps")
    if distributed:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
