"""HDF5-backed dataset (h5py), one file per chunk, read lazily in DataLoader workers.

--mode ok|truncated|leak
"""
import argparse, datetime, glob, logging, os, sys
import numpy as np, h5py
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

ROOT = "/work/rr98/ev/data/h5"
log = logging.getLogger("h5train")


def build(n_chunks=24, rows=32):
    os.makedirs(ROOT, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(n_chunks):
        p = f"{ROOT}/chunk_{k:03d}.h5"
        if os.path.exists(p):
            continue
        with h5py.File(p, "w") as f:
            f.create_dataset("feat", data=rng.standard_normal((rows, 24)).astype("f4"))
            f.create_dataset("y", data=rng.integers(0, 4, rows))


class H5Chunks(Dataset):
    def __init__(self, files, rows=32, cache_handles=False):
        self.files, self.rows, self.cache_handles = files, rows, cache_handles
        self.handles = {}

    def __len__(self):
        return len(self.files) * self.rows

    def _open(self, path):
        if self.cache_handles:
            # keep every file open for speed (one handle per chunk and per worker)
            if path not in self.handles:
                self.handles[path] = open(path, "rb"), h5py.File(path, "r")
            return self.handles[path][1]
        return h5py.File(path, "r")

    def __getitem__(self, i):
        path = self.files[i // self.rows]
        f = self._open(path)
        x = torch.from_numpy(f["feat"][i % self.rows])
        y = int(f["y"][i % self.rows])
        if not self.cache_handles:
            f.close()
        return x, y


def run(rank, world, args):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s: %(message)s")
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    files = sorted(glob.glob(f"{ROOT}/chunk_*.h5"))
    ds = H5Chunks(files, cache_handles=(args.mode == "leak"))
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.Linear(48, 4))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info(f"{len(files)} HDF5 chunks, {len(ds)} rows, {len(dl)} batches/epoch")
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 8 == 0:
                log.info(f"epoch {ep} step {step}/{len(dl)} loss={loss.item():.4f}")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("finished")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--spawn", type=int, default=0)
    ap.add_argument("--port", type=int, default=41720)
    args = ap.parse_args()
    build()
    if args.spawn:
        torch.multiprocessing.spawn(run, args=(args.spawn, args), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), args)


if __name__ == "__main__":
    main()
