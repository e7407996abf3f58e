"""DDP training on per-rank .npy shards read by DataLoader workers (num_workers=2).

--fault selects a real data-pipeline defect that is planted on --bad-rank (at about --bad-step):
  none        healthy (with --noise: unreadable samples are skipped with warnings)
  corrupt     one shard file is truncated on disk (partial copy)
  labelmap    a sample's metadata carries a class name missing from the label map
  killworker  a DataLoader worker of bad-rank is SIGKILLed (as the OOM killer / an operator would)
  segv        a sample goes through a native "fast decoder" path that dereferences NULL (ctypes)
  fifo        a sample path is a named pipe nobody writes (stalled network mount); DataLoader(timeout=)
  varlen      one shard holds samples of a different length; default_collate must stack them
  nofile      bad-rank runs with a low RLIMIT_NOFILE and the dataset caches open file handles
  emptyshard  bad-rank's shard was written with another file suffix, so the glob matches nothing
  iterfew     IterableDataset shards files as files[rank::world]; fewer files than ranks
  uneven      bad-rank's shard holds fewer samples than the others (no DistributedSampler, no join)
  spawnpickle workers use multiprocessing_context='spawn' and the transform is a lambda
  zipshare    samples live in one zip archive opened in __init__ (file handle shared by forked workers)
"""
import argparse, ctypes, glob, io, json, logging, os, signal, sys, time, zipfile, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, IterableDataset, RandomSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--nsamples", type=int, default=96)
p.add_argument("--dim", type=int, default=32)
p.add_argument("--data", default="/work/rr79/cf/data/dl")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--dl-timeout", type=int, default=0)
p.add_argument("--nofile", type=int, default=64)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=36250)
p.add_argument("--sharing", default="", help="torch.multiprocessing sharing strategy")
args = p.parse_args()

log = logging.getLogger("train")


def out(rank, msg, level=logging.INFO):
    if args.logging:
        log.log(level, msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


def write_shard(rank, world):
    d = os.path.join(args.data, f"rank{rank}")
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, "*")):
        os.remove(f)
    rng = np.random.default_rng(1000 + rank)
    n = args.nsamples
    if args.fault == "uneven" and rank == args.bad_rank:
        n = args.bs * args.bad_step  # fewer samples after a dedup pass dropped most of this shard
    suffix = ".npy"
    if args.fault == "emptyshard" and rank == args.bad_rank:
        suffix = ".npz"
    meta = {}
    classes = ["cat", "dog", "bird", "fish"]
    for i in range(n):
        dim = args.dim
        if args.fault == "varlen" and rank == args.bad_rank and i % 5 == 3:
            dim = args.dim + 5
        x = rng.standard_normal(dim).astype(np.float32)
        fn = os.path.join(d, f"sample_{i:05d}{suffix}")
        if suffix == ".npz":
            np.savez(fn, x=x)
        else:
            np.save(fn, x)
        meta[f"sample_{i:05d}"] = {"label": classes[i % 4]}
    if args.noise:
        for i in (7, 41):
            with open(os.path.join(d, f"sample_{i:05d}.npy"), "r+b") as f:
                f.truncate(60)
    if rank == args.bad_rank:
        k = args.bad_step * args.bs + 2
        if args.fault == "corrupt":
            # a partial copy: truncated every file from index k on (rsync interrupted)
            for i in range(k, n):
                fn = os.path.join(d, f"sample_{i:05d}.npy")
                sz = os.path.getsize(fn)
                with open(fn, "r+b") as f:
                    f.truncate(sz - 37)
        if args.fault == "labelmap":
            for i in range(k, n, 3):
                meta[f"sample_{i:05d}"] = {"label": "Bird "}
        if args.fault == "fifo":
            for i in range(k, n):
                fn = os.path.join(d, f"sample_{i:05d}.npy")
                os.remove(fn)
                os.mkfifo(fn)
    if args.fault == "iterfew":
        pass
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f)
    if args.fault == "csvbig":
        import csv
        with open(os.path.join(d, "meta.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["key", "label", "caption"])
            for i, (k, v) in enumerate(meta.items()):
                cap = f"a photo of a {v['label']}"
                if rank == args.bad_rank and i == 61:
                    cap = "<html>" + "<div class=row>scraped page</div>" * 6000 + "</html>"  # scraper dumped a whole page
                w.writerow([k, v["label"], cap])
    if args.fault == "zipshare":
        zp = os.path.join(args.data, f"rank{rank}.zip")
        with zipfile.ZipFile(zp, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for i in range(n):
                fn = os.path.join(d, f"sample_{i:05d}.npy")
                z.write(fn, arcname=f"sample_{i:05d}.npy")


LABELS = {"cat": 0, "dog": 1, "bird": 2, "fish": 3}


class NpyShard(Dataset):
    def __init__(self, rank, transform=None):
        self.dir = os.path.join(args.data, f"rank{rank}")
        self.files = sorted(glob.glob(os.path.join(self.dir, "sample_*.npy")))
        if args.fault == "csvbig":
            import csv
            with open(os.path.join(self.dir, "meta.csv"), newline="") as f:
                self.meta = {r["key"]: {"label": r["label"], "caption": r["caption"]} for r in csv.DictReader(f)}
        else:
            with open(os.path.join(self.dir, "meta.json")) as f:
                self.meta = json.load(f)
        self.transform = transform
        self.handles = {}
        self.rank = rank

    def __len__(self):
        return len(self.files)

    def load(self, fn):
        if args.fault == "nofile":
            # keep handles open to avoid re-opening on the next epoch
            if fn not in self.handles:
                self.handles[fn] = open(fn, "rb")
            fh = self.handles[fn]
            fh.seek(0)
            return np.load(fh)
        if args.fault == "segv" and self.rank == args.bad_rank and fn.endswith("_00030.npy"):
            # fast path via a native decoder for "large" samples
            hdr = ctypes.string_at(ctypes.c_void_p(0x10), 128)  # header pointer not set for mmap'd files
            return np.frombuffer(hdr, dtype=np.float32)[: args.dim].copy()
        return np.load(fn)

    def __getitem__(self, i):
        fn = self.files[i]
        key = os.path.basename(fn)[:-4]
        if args.noise:
            try:
                x = self.load(fn)
            except (ValueError, EOFError, OSError) as e:
                warnings.warn(f"skipping unreadable sample {fn}: {e!r}; substituting zeros")
                x = np.zeros(args.dim, dtype=np.float32)
        else:
            x = self.load(fn)
        y = LABELS[self.meta[key]["label"].strip().lower() if args.noise else self.meta[key]["label"]]
        x = torch.from_numpy(x)
        if args.fault == "manyfields":
            # feature-dict format: one tensor per named feature column
            return {f"f{j:02d}": x[j:j + 1].clone() for j in range(args.dim)}, y
        if self.transform is not None:
            x = self.transform(x)
        return x, y


class ZipShard(Dataset):
    def __init__(self, rank):
        self.zf = zipfile.ZipFile(os.path.join(args.data, f"rank{rank}.zip"))
        self.names = sorted(self.zf.namelist())

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        with self.zf.open(self.names[i]) as f:
            x = np.load(io.BytesIO(f.read()))
        return torch.from_numpy(x), i % 4


class IterShards(IterableDataset):
    def __init__(self, rank, world):
        self.files = sorted(glob.glob(os.path.join(args.data, "part-*.npy")))
        self.mine = self.files[rank::world]
        self.rank = rank

    def __iter__(self):
        wi = torch.utils.data.get_worker_info()
        mine = self.mine if wi is None else self.mine[wi.id::wi.num_workers]
        for fn in mine:
            arr = np.load(fn)
            for row in arr:
                yield torch.from_numpy(row), 0


def make_iter_parts(world):
    os.makedirs(args.data, exist_ok=True)
    for f in glob.glob(os.path.join(args.data, "part-*.npy")):
        os.remove(f)
    rng = np.random.default_rng(0)
    # the export job wrote 2 large parts instead of one per rank
    for i in range(2):
        np.save(os.path.join(args.data, f"part-{i:03d}.npy"), rng.standard_normal((48, args.dim)).astype(np.float32))


def worker_init(wid):
    # give every worker its own numpy stream (augmentations)
    np.random.seed(torch.initial_seed())


def main(rank=None, world=None):
    if rank is None:
        if "RANK" in os.environ:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        else:
            rank, world = 0, 1
    else:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    if args.logging:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.sharing:
        torch.multiprocessing.set_sharing_strategy(args.sharing)
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if args.fault == "nofile" and rank == args.bad_rank:
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))
    if args.fault == "iterfew":
        if rank == 0:
            make_iter_parts(world)
        if distributed:
            dist.barrier()
        ds = IterShards(rank, world)
        out(rank, f"streaming {len(ds.mine)} of {len(ds.files)} parts")
        loader = DataLoader(ds, batch_size=args.bs, num_workers=args.workers)
    else:
        write_shard(rank, world)
        if distributed:
            dist.barrier()
        if args.fault == "zipshare":
            ds = ZipShard(rank)
        elif args.fault == "spawnpickle":
            scale = 0.5
            ds = NpyShard(rank, transform=lambda x: x * scale)
        else:
            ds = NpyShard(rank)
        out(rank, f"dataset: {len(ds)} samples from {args.data}/rank{rank}")
        kw = dict(batch_size=args.bs, sampler=RandomSampler(ds), num_workers=args.workers,
                  timeout=args.dl_timeout)
        if args.fault == "spawnpickle":
            kw["multiprocessing_context"] = "spawn"
        if args.fault == "seedinit":
            kw["worker_init_fn"] = worker_init
        loader = DataLoader(ds, **kw)

    model = nn.Sequential(nn.Linear(args.dim, 64), nn.ReLU(), nn.Linear(64, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    lossf = nn.CrossEntropyLoss()
    step = 0
    for ep in range(args.epochs):
        it = loader
        if args.tqdm:
            from tqdm import tqdm
            it = tqdm(loader, desc=f"rank{rank} epoch {ep}", total=args.steps, file=sys.stdout, mininterval=0, ncols=90)
        n = 0
        for x, y in it:
            if isinstance(x, dict):
                x = torch.cat([x[k] for k in sorted(x)], dim=1)
            out_ = model(x)
            loss = lossf(out_, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 2 == 0 and not args.tqdm:
                out(rank, f"epoch {ep} step {step} loss {loss.item():.4f}")
            step += 1
            n += 1
            if args.fault == "killworker" and rank == args.bad_rank and step == args.bad_step:
                # the host OOM killer picks the largest worker of this rank
                kids = open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
                os.kill(int(kids[-1]), signal.SIGKILL)
            if step >= args.steps * (ep + 1) and args.fault not in ("uneven", "iterfew"):
                break
        out(rank, f"epoch {ep} done after {n} batches")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    out(rank, "training finished")


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
