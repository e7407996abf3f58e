"""Streaming (IterableDataset) reader over per-rank line files; DataLoader configuration faults.
--fault {none,iterable_sampler,auto_workers}
  iterable_sampler: DistributedSampler passed to a DataLoader over an IterableDataset
  auto_workers:     num_workers computed as cpu_count // local_world_size with a fixed prefetch_factor"""
import os, sys, argparse, math, random
import torch
import torch.distributed as dist
from torch.utils.data import IterableDataset, DataLoader, DistributedSampler, get_worker_info
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, MLP, wrap

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="/work/rr63/al/data/lines")
p.add_argument("--bs", type=int, default=8)
p.add_argument("--rows", type=int, default=96)
p.add_argument("--workers", type=int, default=1)
a = p.parse_args()
rank, ws = setup()
os.makedirs(a.data, exist_ok=True)
fn = os.path.join(a.data, f"rank{rank}.tsv")
rnd = random.Random(rank)
with open(fn, "w") as f:
    for i in range(a.rows):
        f.write("\t".join(f"{rnd.gauss(0,1):.4f}" for _ in range(16)) + f"\t{rnd.randrange(4)}\n")
if ws > 1:
    dist.barrier()

class LineStream(IterableDataset):
    def __init__(self, path):
        self.path = path
    def __iter__(self):
        wi = get_worker_info()
        wid, nw = (wi.id, wi.num_workers) if wi else (0, 1)
        with open(self.path) as f:
            for i, line in enumerate(f):
                if i % nw != wid:
                    continue
                *xs, y = line.rstrip("\n").split("\t")
                yield torch.tensor([float(v) for v in xs]), int(y)
    def __len__(self):
        return a.rows

ds = LineStream(fn)
local_ws = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
if a.fault == "iterable_sampler":
    dl = DataLoader(ds, batch_size=a.bs, sampler=DistributedSampler(ds), num_workers=a.workers)
elif a.fault == "auto_workers":
    nw = (os.cpu_count() or 1) // local_ws // 2     # leave half the cores for the trainer
    print(f"[rank{rank}] cpu_count={os.cpu_count()} local_world_size={local_ws} -> num_workers={nw}", flush=True)
    dl = DataLoader(ds, batch_size=a.bs, num_workers=nw, prefetch_factor=4, persistent_workers=True)
else:
    dl = DataLoader(ds, batch_size=a.bs, num_workers=a.workers)
torch.manual_seed(0)
model = wrap(MLP(), ws)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step = 0
for ep in range(2):
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step(); step += 1
        if step % 4 == 0:
            print(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
if ws > 1:
    dist.barrier(); dist.destroy_process_group()
print(f"[rank{rank}] done ({step} steps)", flush=True)
