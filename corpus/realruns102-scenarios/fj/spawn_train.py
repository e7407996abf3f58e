"""mp.spawn trainer over memory-mapped .npy feature shards (one directory per rank).

python scenarios/spawn_train.py --world 2 --data-root data/npy --fault {none,empty,noisy}
"""
import argparse, glob, logging, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NpyShards(Dataset):
    def __init__(self, files):
        self.x = [np.load(f, mmap_mode="r") for f in files if f.endswith("_x.npy")]
        self.y = [np.load(f.replace("_x.npy", "_y.npy")) for f in files if f.endswith("_x.npy")]
        self.index = [(i, j) for i, a in enumerate(self.x) for j in range(len(a))]

    def __len__(self):
        return len(self.index)

    def __getitem__(self, k):
        i, j = self.index[k]
        return torch.from_numpy(np.array(self.x[i][j], dtype=np.float32)), int(self.y[i][j])


def worker(rank, a):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"[%(asctime)s] {{rank{rank}}} %(levelname)s %(message)s")
    log = logging.getLogger("spawn_train")
    dist.init_process_group("gloo", rank=rank, world_size=a.world, timeout=timedelta(seconds=a.pg_timeout))
    if a.fault == "outdir-guard" and rank == 0:
        if os.path.isdir(a.out_dir) and os.listdir(a.out_dir) and not a.overwrite:
            log.error("output dir %s is not empty; refusing to overwrite (pass --overwrite)", a.out_dir)
            sys.exit(3)
    eval_group = dist.new_group(ranks=list(range(a.world)), timeout=timedelta(seconds=a.pg_timeout))
    log.info("eval group ready")
    pattern = os.path.join(a.data_root, f"part-{rank}", "*.npy")
    files = sorted(glob.glob(pattern))
    log.info("found %d files for %s", len(files), pattern)
    ds = NpyShards(files)
    log.info("dataset rows: %d", len(ds))
    dl = DataLoader(ds, batch_size=64, shuffle=True, num_workers=a.workers, drop_last=True)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    step = 0
    for epoch in range(a.epochs):
        for x, y in dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % a.log_every == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
            if a.fault == "noisy" and rank == 0 and step == 12:
                try:
                    import urllib.request
                    urllib.request.urlopen("http://127.0.0.1:9/metrics", timeout=1)
                except Exception:
                    log.exception("metrics push failed, continuing without remote metrics")
        if a.fault == "noisy":
            warnings.warn(f"epoch {epoch}: 3 samples had all-zero features and were kept", RuntimeWarning)
    dist.barrier()
    log.info("finished %d steps", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--data-root", default="data/npy")
    p.add_argument("--port", type=int, default=42720)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--pg-timeout", type=int, default=20)
    p.add_argument("--fault", default="none")
    p.add_argument("--out-dir", default="runs/spawn_out")
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.world, join=True)
