"""Tiny DDP/single-process classifier training over on-disk data with a torch DataLoader.

--fault selects a data-pipeline fault that is made real on --fault-rank at --fault-step.
"""
import argparse, json, logging, os, sys, time, signal, io
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--prefetch", type=int, default=None)
p.add_argument("--persistent", action="store_true")
p.add_argument("--bs", type=int, default=8)
p.add_argument("--data", default="/work/rr105/fr/data")
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--ctx", default=None)
p.add_argument("--spawn", type=int, default=0)
args = p.parse_args()

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{RANK}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.logfmt == "logging":
        log.info(msg)
    else:
        print(f"[rank{RANK}] {msg}", flush=True)


FEAT = 16
NCLS = 4


def make_data(root, n=256):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    # jsonl records
    path = os.path.join(root, f"train-{RANK}.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            rec = {"x": rng.normal(size=FEAT).round(4).tolist(), "y": int(rng.integers(0, NCLS))}
            f.write(json.dumps(rec) + "\n")
    # memmap
    arr = np.lib.format.open_memmap(os.path.join(root, f"feats-{RANK}.npy"), mode="w+", dtype=np.float32, shape=(n, 4096))
    arr[:] = rng.normal(size=(n, 4096)).astype(np.float32)
    arr.flush(); del arr
    return path


class JsonlDataset(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = []
        off = 0
        with open(path, "rb") as f:
            for line in f:
                self.offsets.append(off)
                off += len(line)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        x = torch.tensor(rec["x"], dtype=torch.float32)
        return x, rec["y"]


class ImageDataset(Dataset):
    """PNG files decoded with PIL, features = downsampled pixels."""
    def __init__(self, root, n=64):
        from PIL import Image
        self.files = []
        d = os.path.join(root, f"img-{RANK}")
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(1)
        for i in range(n):
            fn = os.path.join(d, f"{i:05d}.png")
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(fn)
            self.files.append(fn)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        from PIL import Image
        with Image.open(self.files[i]) as im:
            a = np.asarray(im.convert("L").resize((4, 4)), dtype=np.float32) / 255.0
        return torch.from_numpy(a.reshape(-1)), i % NCLS


class MemmapDataset(Dataset):
    def __init__(self, path):
        self.arr = np.load(path, mmap_mode="r")

    def __len__(self):
        return self.arr.shape[0]

    def __getitem__(self, i):
        row = np.array(self.arr[i, :FEAT])
        return torch.from_numpy(row), i % NCLS


class OpenFilesDataset(JsonlDataset):
    """Keeps a handle per record open (a 'cache' of file handles)."""
    handles = []

    def __getitem__(self, i):
        f = open(self.path, "rb")
        self.handles.append(f)  # bug: never closed
        f.seek(self.offsets[i])
        rec = json.loads(f.readline())
        return torch.tensor(rec["x"]), rec["y"]


class FifoDataset(JsonlDataset):
    """Reads each record's sidecar from a path; for one index the sidecar is a fifo nobody writes to."""
    def __init__(self, path, fifo):
        super().__init__(path)
        self.fifo = fifo

    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        if i % 40 == 0 and self.fifo:
            with open(self.fifo, "rb") as f:  # blocks: remote mount stalled
                f.read(1)
        return x, y


def ragged_collate_ok(batch):
    return torch.utils.data.default_collate(batch)


def main():
    if WORLD > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    root = os.path.join(args.data, args.fault)
    path = make_data(root)
    fault_here = RANK == args.fault_rank
    collate = None
    if args.fault in ("pil_bad",):
        ds = ImageDataset(root)
        if fault_here:
            # a partially downloaded file: HTML error page saved under .png name
            with open(ds.files[21], "wb") as f:
                f.write(b"<html><body>503 Service Unavailable</body></html>\n")
    elif args.fault in ("mmap_shrink", "mmap_shrink_w"):
        ds = MemmapDataset(os.path.join(root, f"feats-{RANK}.npy"))
    elif args.fault == "none_memmap":
        class NoCopy(MemmapDataset):
            def __getitem__(self, i):
                return torch.from_numpy(self.arr[i, :FEAT]), i % NCLS  # zero-copy view of the read-only memmap
        ds = NoCopy(os.path.join(root, f"feats-{RANK}.npy"))
    elif args.fault == "shm_big":
        class Full(MemmapDataset):
            def __getitem__(self, i):
                return torch.from_numpy(np.array(self.arr[i])), i % NCLS
        ds = Full(os.path.join(root, f"feats-{RANK}.npy"))
    elif args.fault == "openfiles":
        ds = OpenFilesDataset(path)
    elif args.fault == "fifo":
        fifo = os.path.join(root, f"sidecar-{RANK}.bin")
        if fault_here:
            if os.path.exists(fifo):
                os.remove(fifo)
            os.mkfifo(fifo)
        ds = FifoDataset(path, fifo if fault_here else None)
    else:
        ds = JsonlDataset(path)
    if args.fault == "jsonl_bad" and fault_here:
        # a writer crashed mid-record: truncate one record in place
        lines = open(path).read().splitlines(True)
        for k in (37, 38, 190):
            lines[k] = lines[k][: len(lines[k]) // 2] + "\n"
        open(path, "w").write("".join(lines))
        ds = JsonlDataset(path)
    if args.fault == "ragged" and fault_here:
        # some records were exported with a different feature extractor (fewer dims)
        lines = open(path).read().splitlines(True)
        for k in range(40, 256, 29):
            rec = json.loads(lines[k]); rec["x"] = rec["x"][:12]; lines[k] = json.dumps(rec) + "\n"
        open(path, "w").write("".join(lines))
        ds = JsonlDataset(path)
    if args.fault == "float_labels":
        # labels read as float soft targets from a regression export
        class F(JsonlDataset):
            def __getitem__(self, i):
                x, y = super().__getitem__(i)
                return x, float(y)
        ds = F(path)
    if args.fault == "empty" and fault_here:
        # filter by a field name that does not exist in this export -> everything dropped
        keep = [i for i in range(len(ds)) if json.loads(open(path).readlines()[i]).get("label") is not None]
        ds = torch.utils.data.Subset(ds, keep)
        say(f"after filtering: {len(ds)} records")
    if args.fault == "worker_keyerror" and fault_here:
        class K(JsonlDataset):
            def __getitem__(self, i):
                with open(self.path, "rb") as f:
                    f.seek(self.offsets[i]); rec = json.loads(f.readline())
                return torch.tensor(rec["x"]), rec["label"]  # renamed field
        ds = K(path)
    if args.fault == "pickle":
        ds.fh = open(path, "rb")  # cache an open handle on the dataset for speed
        ds.tok = lambda s: s.split()

    sampler = DistributedSampler(ds, num_replicas=WORLD, rank=RANK, shuffle=True, seed=0) if WORLD > 1 else None
    dl_kwargs = dict(batch_size=args.bs, num_workers=args.workers, sampler=sampler, shuffle=(sampler is None),
                     persistent_workers=args.persistent, drop_last=False, timeout=args.timeout)
    if args.prefetch is not None:
        dl_kwargs["prefetch_factor"] = args.prefetch
    if args.ctx:
        dl_kwargs["multiprocessing_context"] = args.ctx
    dl = DataLoader(ds, **dl_kwargs)
    say(f"dataset={type(ds).__name__} n={len(ds)} batches/epoch={len(dl)} workers={args.workers} world={WORLD}")

    model = nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.Linear(64, NCLS))
    if WORLD > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()
    step = 0
    it_wrap = None
    if args.logfmt == "tqdm" and RANK == 0:
        from tqdm import tqdm
        it_wrap = tqdm(total=args.steps, desc="train", file=sys.stdout, mininterval=0)
    epoch = 0
    t0 = time.time()
    while step < args.steps:
        if sampler is not None:
            sampler.set_epoch(epoch)
        for bi, (x, y) in enumerate(dl):
            if args.fault in ("mmap_shrink", "mmap_shrink_w") and fault_here and step == args.fault_step:
                # the feature-extraction job re-wrote the shard in place (truncate then write)
                fn = os.path.join(root, f"feats-{RANK}.npy")
                with open(fn, "r+b") as f:
                    f.truncate(4096)
                say(f"(shard {fn} rewritten by extractor)")
            if args.fault == "kill_worker" and fault_here and step == args.fault_step:
                # simulate the kernel OOM killer picking a fat worker: SIGKILL one child
                kids = open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
                if kids:
                    os.kill(int(kids[0]), signal.SIGKILL)
            if x.shape[1] > FEAT:
                x = x[:, :FEAT]  # projection head only uses the first FEAT dims for now
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if it_wrap is not None:
                it_wrap.set_postfix(loss=f"{loss.item():.4f}"); it_wrap.update(1)
            elif step % 2 == 0 or step == 1:
                say(f"epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} lr 3.0e-03 {time.time()-t0:.1f}s")
            if step >= args.steps:
                break
        epoch += 1
    if it_wrap is not None:
        it_wrap.close()
    say(f"training done: {step} steps, final loss {loss.item():.4f}")
    if WORLD > 1:
        dist.barrier()
        dist.destroy_process_group()


def _spawned(rank, world):
    global RANK, WORLD
    RANK, WORLD = rank, world
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=os.environ.get("MASTER_PORT", "43070"))
    main()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawned, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
