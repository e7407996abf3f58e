"""DataLoader / input-pipeline fault scenarios under DDP (gloo) or single process."""
import argparse, os, sys, time, glob, io, wave, ctypes, signal, logging, struct, json
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, IterableDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--data", default="/work/rr115/gk/data")
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--pin", action="store_true")
p.add_argument("--persistent", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=44810)
p.add_argument("--tslog", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--ctx", default=None)
args = p.parse_args()

def get_logger(rank):
    lg = logging.getLogger("train")
    if args.tslog and not lg.handlers:
        h = logging.StreamHandler(sys.stdout)
        h.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s"))
        lg.addHandler(h); lg.setLevel(logging.INFO); lg.propagate = False
    return lg

def out(rank, msg, level="info"):
    if args.tslog:
        getattr(get_logger(rank), level)(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)

# ---------------- datasets ----------------
class SynthDS(Dataset):
    def __init__(self, n, rank, fault, frank, fstep, bs):
        self.n, self.rank, self.fault, self.frank = n, rank, fault, frank
        self.bad_idx = fstep * bs + 1
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        hit = (self.rank == self.frank and i == self.bad_idx)
        if hit and self.fault == "segv":
            ctypes.string_at(0)  # NULL deref in a C helper (e.g. a buggy decoder binding)
        if hit and self.fault == "slow":
            time.sleep(30)  # e.g. a stalled network filesystem read
        if self.fault == "oddsample" and hit:
            return torch.randn(17), self.y[i]  # one record with an extra feature column
        return self.x[i], self.y[i]

class GrowingDS(Dataset):
    """curriculum dataset: more samples unlocked each epoch"""
    def __init__(self, n):
        self.items = list(range(n))
    def grow(self, k):
        self.items.extend(range(len(self.items), len(self.items) + k))
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        v = self.items[i]
        return torch.full((16,), float(v % 7) / 7), torch.tensor(v % 4)

class StreamDS(IterableDataset):
    """line-by-line stream of records; forgot get_worker_info() sharding"""
    def __init__(self, n, rank, world, length=None):
        self.n, self.rank, self.world, self.length = n, rank, world, length
    def __iter__(self):
        for i in range(self.rank, self.n, self.world):
            g = torch.Generator().manual_seed(i)
            yield i, torch.randn(16, generator=g), torch.tensor(i % 4)
    def __len__(self):
        return self.length if self.length is not None else len(range(self.rank, self.n, self.world))

class ImageFolderDS(Dataset):
    def __init__(self, root):
        from PIL import Image
        self.files = sorted(glob.glob(os.path.join(root, "*.png")))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.files[i]) as im:
            a = np.asarray(im.convert("L").resize((4, 4)), dtype=np.float32) / 255.0
        return torch.from_numpy(a.reshape(16)), torch.tensor(i % 4)

class WavDS(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.wav")))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        with wave.open(self.files[i], "rb") as w:
            fr = w.readframes(w.getnframes())
        a = np.frombuffer(fr, dtype=np.int16)[:16].astype(np.float32) / 32768
        return torch.from_numpy(a.copy()), torch.tensor(i % 4)

class RecordDS(Dataset):
    """one .npy per record + labels.json mapping class names to ids"""
    def __init__(self, root, rank):
        self.files = sorted(glob.glob(os.path.join(root, f"rank{rank}", "*.npy")))
        self.meta = json.load(open(os.path.join(root, f"rank{rank}", "meta.json")))
        self.classes = {"cat": 0, "dog": 1, "bird": 2, "fish": 3}
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        a = np.load(self.files[i])
        lab = self.classes[self.meta[os.path.basename(self.files[i])]]
        return torch.from_numpy(a.astype(np.float32)), torch.tensor(lab)

class ShardFileDS(Dataset):
    """reads data/shards/part-<rank>.npy"""
    def __init__(self, path):
        self.a = np.load(path)
    def __len__(self):
        return len(self.a)
    def __getitem__(self, i):
        return torch.from_numpy(self.a[i, :16].astype(np.float32)), torch.tensor(int(self.a[i, 16]) % 4)

# ---------------- training ----------------
def run(rank, world):
    lg = get_logger(rank)
    ddp = world > 1
    if ddp:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if args.fault == "bn_last":
        model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    lossf = nn.CrossEntropyLoss()
    f = args.fault
    sampler = None
    shuffle = True
    collate = None
    extra = {}
    if f in ("none", "segv", "slow", "oddsample", "killworker", "noseteopch", "manyworkers", "pinmem", "fdlimit", "shm", "pickle", "bn_last"):
        n = 8 * args.bs * max(world, 1) * args.steps // 8
        if f == "bn_last":
            n = args.bs * world * args.steps + world  # one leftover sample per rank
        if f == "shm":
            n = 64 * world
        ds = SynthDS(n, rank, f, args.rank, args.step, args.bs)
        if f == "fdlimit":
            class Multi(Dataset):
                # multi-crop augmentation: returns 48 small views per image
                def __len__(s): return 512
                def __getitem__(s, i): return [torch.randn(4) for _ in range(48)], torch.tensor(i % 4)
            ds = Multi()
        if f == "shm":
            class Big(Dataset):
                def __len__(s): return 64
                def __getitem__(s, i): return torch.randn(256, 256, 16), torch.tensor(i % 4)
            ds = Big()
    elif f == "persist":
        ds = GrowingDS(args.bs * 4)
    elif f in ("iterdup", "iterlen"):
        ds = StreamDS(args.bs * args.steps * max(world, 1), rank if f == "iterlen" else 0, world if f == "iterlen" else 1,
                      length=(args.steps // 2) if f == "iterlen" else None)
        shuffle = False
    elif f in ("labelmap", "npyrec"):
        ds = RecordDS(os.path.join(args.data, "records_" + f), rank)
    elif f == "badimg":
        ds = ImageFolderDS(os.path.join(args.data, "images"))
    elif f == "badwav":
        ds = WavDS(os.path.join(args.data, "audio"))
    elif f in ("uneven", "missingshard", "emptydir", "noperm"):
        if f == "emptydir":
            files = sorted(glob.glob(os.path.join(args.data, "train_parquet", "*.png")))
            out(rank, f"found {len(files)} training files under {args.data}/train_parquet")
            ds = ImageFolderDS(os.path.join(args.data, "train_parquet"))
        else:
            ds = ShardFileDS(os.path.join(args.data, "shards", f"part-{rank:05d}.npy"))
    else:
        raise SystemExit("unknown fault " + f)

    if f == "pickle":
        mean = ds.x.mean(0)
        ds.transform = lambda t: t - mean
    if ddp and not isinstance(ds, IterableDataset) and f not in ("uneven", "missingshard", "noperm", "labelmap", "npyrec"):
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, drop_last=False)
        shuffle = False
    elif f in ("uneven", "missingshard", "noperm"):
        shuffle = True
    if sampler is not None and hasattr(ds, "bad_idx"):
        ds.bad_idx = list(iter(sampler))[min(args.step * args.bs + 1, len(sampler) - 1)]
    if args.timeout:
        extra["timeout"] = args.timeout
    if args.ctx:
        extra["multiprocessing_context"] = args.ctx
    workers = args.workers
    if f == "manyworkers":
        workers = 6
    dl = DataLoader(ds, batch_size=args.bs, shuffle=shuffle, sampler=sampler, num_workers=workers,
                    pin_memory=args.pin, persistent_workers=args.persistent and workers > 0,
                    collate_fn=collate, **extra)
    out(rank, f"dataset={type(ds).__name__} len={len(ds)} batches/epoch={len(dl)} workers={workers} world={world}")
    seen_ids = set()
    first_epoch_order = None
    gstep = 0
    for ep in range(args.epochs):
        if sampler is not None and f != "noseteopch":
            sampler.set_epoch(ep)
        if f == "persist" and ep > 0:
            ds.grow(args.bs * 2)
            out(rank, f"curriculum: unlocked {args.bs*2} more samples, dataset now {len(ds)}")
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", file=sys.stderr, mininterval=0)
        order = []
        tot = 0.0
        for bi, batch in enumerate(it):
            if f == "fdlimit":
                views, y = batch
                x = torch.cat(views, 1)[:, :16]
                batch = (x, y)
            if f in ("iterdup", "iterlen"):
                ids, x, y = batch
                ids = ids.tolist()
                if f == "iterdup":
                    dup = seen_ids.intersection(ids)
                    assert not dup, f"duplicate sample ids in epoch {ep} batch {bi}: {sorted(dup)[:8]} (seen {len(seen_ids)} unique so far)"
                    seen_ids.update(ids)
            else:
                x, y = batch
            order.append(float(x.sum()))
            if f == "killworker" and rank == args.rank and gstep == args.step:
                # register with the node's memory watchdog, which reaps fat children of this pid
                with open("/work/rr115/gk/data/trainer_pid.txt", "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(4)
            opt.zero_grad()
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            tot += loss.item()
            gstep += 1
            if bi % 2 == 0:
                out(rank, f"epoch {ep} step {bi} loss {loss.item():.4f}")
            time.sleep(0.05)
        if f == "noseteopch":
            if first_epoch_order is None:
                first_epoch_order = order
            elif order == first_epoch_order:
                out(rank, f"WARNING: epoch {ep} visited samples in exactly the same order as epoch 0 (DistributedSampler.set_epoch not called?)", "warning")
        if f == "iterdup":
            seen_ids = set()
        out(rank, f"epoch {ep} done mean_loss {tot/max(1,len(order)):.4f}")
    if ddp:
        dist.barrier()
        dist.destroy_process_group()
    out(rank, "training finished")

def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        run(0, 1)
