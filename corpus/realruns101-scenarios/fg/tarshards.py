"""Hand-written IterableDataset over tar shards (webdataset-like), DDP over gloo on CPU."""
import argparse, os, io, tarfile, glob, time, sys, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--shards", default="data/shards/train-{00000..00003}.tar")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--report-len", type=int, default=0)
p.add_argument("--epoch-metrics", type=int, default=1)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--logfmt", default="print")
args = p.parse_args()

def expand(pat):
    # brace expansion like webdataset: train-{00000..00003}.tar
    if "{" not in pat: return sorted(glob.glob(pat))
    pre, rest = pat.split("{", 1); rng, post = rest.split("}", 1)
    a, b = rng.split(".."); w = len(a)
    return [f"{pre}{i:0{w}d}{post}" for i in range(int(a), int(b) + 1)]

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(message)s")
    log = lambda m: logging.info(f"rank={rank} {m}")
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)
dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))

class TarShards(IterableDataset):
    def __init__(self, urls, rank, world, nominal_len=None):
        self.urls = urls[rank::world]; self.nominal_len = nominal_len
    def __len__(self):
        return self.nominal_len
    def __iter__(self):
        wi = get_worker_info()
        urls = self.urls if wi is None else self.urls[wi.id::wi.num_workers]
        for u in urls:
            with tarfile.open(u, "r") as tf:
                cur = {}
                for m in tf:
                    key, ext = m.name.rsplit(".", 1)
                    cur[ext] = tf.extractfile(m).read()
                    if "npy" in cur and "cls" in cur:
                        x = np.load(io.BytesIO(cur["npy"]))
                        yield torch.from_numpy(x), int(cur["cls"])
                        cur = {}

urls = expand(args.shards)
log(f"{len(urls)} shards, this rank reads {urls[rank::world]}")
ds = TarShards(urls, rank, world, nominal_len=(args.report_len or None))
dl = DataLoader(ds, batch_size=args.bs, num_workers=args.workers)
if args.report_len: log(f"planned steps per epoch: len(dataloader)={len(dl)}")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
step = 0
for ep in range(args.epochs):
    tot = torch.zeros(2)
    for x, y in dl:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); step += 1
        tot += torch.tensor([loss.item() * len(y), len(y)])
        if step % 5 == 0: log(f"ep {ep} step {step} loss {loss.item():.4f}")
    if args.epoch_metrics:
        dist.all_reduce(tot)
        log(f"epoch {ep} mean loss {tot[0] / tot[1]:.4f} over {int(tot[1])} samples")
dist.barrier()
log("done")
dist.destroy_process_group()
