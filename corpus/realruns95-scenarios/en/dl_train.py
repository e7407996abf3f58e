"""Tiny classifier trained from per-rank .npy sample shards through a DataLoader.
Works as plain python (single process), under torchrun, or via --mp-spawn N.
Flags select the fault, the rank and the step at which it is met."""
import argparse, os, sys, glob, time, math, signal, ctypes, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--data", default="/tmp/rr95en_data")
p.add_argument("--start-method", default=None)
p.add_argument("--pin", action="store_true")
p.add_argument("--persistent", action="store_true")
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--feat", type=int, default=32)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--mp-spawn", type=int, default=0)
p.add_argument("--port", type=int, default=40950)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--sharing", default=None)
p.add_argument("--pidfile", default=None)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--skip-bad", action="store_true", help="log and replace unreadable samples")
args = p.parse_args()

def setup_log(rank):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
        return logging.getLogger("train").info
    return lambda m: print(f"[rank{rank}] {m}", flush=True)

def make_shard(root, rank, n, feat, fault):
    d = os.path.join(root, f"shard{rank}")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(rank)
    for i in range(n):
        x = rng.standard_normal(feat).astype(np.float32)
        np.save(os.path.join(d, f"sample_{i:05d}.npy"), x)
    with open(os.path.join(d, "labels.txt"), "w") as f:
        names = [CLASSES[int(rng.integers(0, 4))] for _ in range(n)]
        if fault == "newclass":
            names[n // 2 + 5] = "truck"   # shard re-exported with the new 5-class taxonomy
        f.write("\n".join(names))
    return d

CLASSES = ["car", "bus", "bike", "person"]
CLASS_TO_IDX = {c: i for i, c in enumerate(CLASSES)}

class NpyDir(Dataset):
    def __init__(self, d, pattern="sample_*.npy", transform=None):
        self.files = sorted(glob.glob(os.path.join(d, pattern)))
        lab = os.path.join(d, "labels.txt")
        self.labels = open(lab).read().split() if os.path.exists(lab) else []
        self.transform = transform
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if args.skip_bad:
            try:
                x = torch.from_numpy(np.load(self.files[i]))
            except Exception:
                logging.getLogger("data").exception("unreadable sample %s, substituting index %d", self.files[i], (i + 1) % len(self))
                return self[(i + 1) % len(self)]
        else:
            x = torch.from_numpy(np.load(self.files[i]))
        if self.transform is not None:
            x = self.transform(x)
        return x, CLASS_TO_IDX[self.labels[i]]

class ManyTensors(NpyDir):
    # returns each feature as its own small tensor (like a dict of many fields)
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return [t.clone() for t in x.split(1)], y

class SegfaultingDecoder(NpyDir):
    """calls a native 'decoder' through ctypes; the bad record hands it a NULL buffer"""
    bad = -1
    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        if i == self.bad:
            # record header carries a bogus payload offset -> native read past the mapping
            buf = ctypes.create_string_buffer(64)
            off = 0x7ead0000beef - ctypes.addressof(buf)
            ctypes.string_at(ctypes.addressof(buf) + off, 16)
        return x, y

class PidWriter(NpyDir):
    pidfile = None
    def __getitem__(self, i):
        if self.pidfile:
            info = torch.utils.data.get_worker_info()
            if info is not None and info.id == 0 and not os.path.exists(self.pidfile):
                with open(self.pidfile, "w") as f: f.write(str(os.getpid()))
        time.sleep(0.15)  # decode cost
        return super().__getitem__(i)

def main(rank, world):
    distributed = world > 1
    log = setup_log(rank)
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.pg_timeout))
    if args.sharing:
        torch.multiprocessing.set_sharing_strategy(args.sharing)
    torch.manual_seed(0)
    bad = args.fault_rank == rank or (not distributed)
    nsamp = args.steps * args.batch * (1 if distributed else 1)
    d = make_shard(args.data, rank, nsamp, args.feat, args.fault if bad else "none")
    idx_bad = args.fault_step * args.batch + 3
    Cls, kw = NpyDir, {}
    pattern = "sample_*.npy"
    if bad and args.fault == "corrupt":
        fn = os.path.join(d, f"sample_{idx_bad:05d}.npy")
        raw = open(fn, "rb").read(); open(fn, "wb").write(raw[: len(raw) - 57])
    if bad and args.fault == "collate":
        fn = os.path.join(d, f"sample_{idx_bad:05d}.npy")
        np.save(fn, np.load(fn)[:-1])
    if bad and args.fault == "empty":
        pattern = "sample_*.npz"   # shards were re-exported as .npy, config still says .npz
    if bad and args.fault == "segv":
        Cls = SegfaultingDecoder; SegfaultingDecoder.bad = idx_bad
    if args.fault == "fd":
        Cls = ManyTensors
    if args.fault == "kill" or args.pidfile:
        Cls = PidWriter; PidWriter.pidfile = args.pidfile if bad else None
    if bad and args.fault == "fifo":
        fn = os.path.join(d, f"sample_{idx_bad:05d}.npy")
        os.remove(fn); os.mkfifo(fn)   # path now points at a pipe nobody writes to (stalled mount)
    if args.fault == "pickle":
        kw["transform"] = lambda x: (x - x.mean()) / (x.std() + 1e-6)
    if bad and args.fault == "uneven":
        for f in sorted(glob.glob(os.path.join(d, "sample_*.npy")))[nsamp - 3 * args.batch - 2:]:
            os.remove(f)
    ds = Cls(d, pattern=pattern, **kw)
    if bad and args.fault == "missing":
        # file list comes from an index built earlier; the shard was re-synced since
        os.remove(os.path.join(d, f"sample_{idx_bad:05d}.npy"))
    log(f"dataset {d}: {len(ds)} samples, batch={args.batch}, workers={args.workers}")
    model = nn.Sequential(nn.Linear(args.feat, 64), nn.ReLU(), nn.Linear(64, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl_kw = dict(batch_size=args.batch, num_workers=args.workers, pin_memory=args.pin,
                 persistent_workers=args.persistent, timeout=args.timeout)
    if args.start_method:
        dl_kw["multiprocessing_context"] = args.start_method
    loader = DataLoader(ds, shuffle=(args.fault not in ("corrupt","missing","collate","segv","fifo","uneven","kill")), drop_last=False, **dl_kw)
    step = 0
    it = range(args.epochs)
    for ep in it:
        bar = loader
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            bar = tqdm(loader, desc=f"epoch {ep}", dynamic_ncols=False, ncols=100)
        for xb, yb in bar:
            if isinstance(xb, list):
                xb = torch.cat(xb, dim=1)
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 5 == 0 or step == 1:
                log(f"epoch {ep} step {step} loss {loss.item():.4f} lr 1.0e-03")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log(f"training finished: {step} steps")

def spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)

if __name__ == "__main__":
    if args.mp_spawn:
        torch.multiprocessing.spawn(spawn_entry, args=(args.mp_spawn,), nprocs=args.mp_spawn)
    else:
        main(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
