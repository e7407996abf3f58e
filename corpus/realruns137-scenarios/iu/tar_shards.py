"""webdataset-style training: samples stored as <key>.npy/<key>.cls members of tar shards."""
import argparse, io, os, tarfile, glob, time, logging
from datetime import timedelta
import numpy as np, torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--make-shards", default=None)
p.add_argument("--shards", default="/work/rr137/iu/data/tars/train-*.tar")
p.add_argument("--truncate", default=None, help="when making shards: shard name to cut short (simulates interrupted upload)")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=16)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("wds")

def make_shards(d, n=8, per=64):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for s in range(n):
        path = os.path.join(d, f"train-{s:05d}.tar")
        with tarfile.open(path, "w") as tf:
            for i in range(per):
                key = f"{s:05d}_{i:05d}"
                x = rng.normal(size=(16, 16)).astype(np.float32)
                buf = io.BytesIO(); np.save(buf, x); b = buf.getvalue()
                ti = tarfile.TarInfo(f"{key}.npy"); ti.size = len(b); tf.addfile(ti, io.BytesIO(b))
                c = str(int(x.sum() > 0)).encode()
                ti = tarfile.TarInfo(f"{key}.cls"); ti.size = len(c); tf.addfile(ti, io.BytesIO(c))
        if a.truncate and os.path.basename(path) == a.truncate:
            sz = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.truncate(sz // 2 + 300)
    print("wrote", n, "shards to", d)

class TarStream(IterableDataset):
    def __init__(self, shards, rank, world):
        self.shards = shards[rank::world]
    def __iter__(self):
        wi = get_worker_info()
        mine = self.shards if wi is None else self.shards[wi.id::wi.num_workers]
        for sh in mine:
            with tarfile.open(sh, "r") as tf:
                cur = {}
                for m in tf:
                    key, ext = m.name.rsplit(".", 1)
                    data = tf.extractfile(m).read()
                    cur[ext] = data
                    if "npy" in cur and "cls" in cur:
                        x = torch.from_numpy(np.load(io.BytesIO(cur["npy"])))
                        yield x.flatten(), int(cur["cls"])
                        cur = {}

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    shards = sorted(glob.glob(a.shards))
    log.info("rank %d/%d: %d shards total, reading %s", rank, world, len(shards), [os.path.basename(s) for s in shards[rank::world]])
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(TarStream(shards, rank, world), batch_size=a.bs, num_workers=a.workers)
    step = 0
    for ep in range(a.epochs):
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 4 == 0:
                log.info("rank %d epoch %d step %d loss %.4f", rank, ep, step, loss.item())
        log.info("rank %d finished epoch %d at step %d", rank, ep, step)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if a.make_shards:
        make_shards(a.make_shards)
    else:
        main()
