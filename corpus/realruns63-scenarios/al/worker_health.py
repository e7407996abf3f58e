"""Records read from a packed binary shard by DataLoader workers; worker-level failures.
--fault {none,fifo,hugelen,nofile,killworker} --fault-rank R
  fifo:      one shard path on rank R is a named pipe left by a crashed streaming job (read blocks)
  hugelen:   a record length header on rank R is corrupted (decoder allocates from it)
  nofile:    rank R host has a low open-files limit (RLIMIT_NOFILE) with many tensors per batch
  killworker: (external) a worker pid is written to --pidfile for an outside kill"""
import os, sys, argparse, struct, time, resource
import numpy as np, torch
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, MLP, wrap

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr63/al/data/packed")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--n", type=int, default=128)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--nofile", type=int, default=0)
p.add_argument("--pidfile", default="")
p.add_argument("--sleep", type=float, default=0.05)
a = p.parse_args()
rank, ws = setup()
d = os.path.join(a.data, f"rank{rank}")
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(rank)
nfiles = 4
per = a.n // nfiles
for k in range(nfiles):
    fn = os.path.join(d, f"chunk{k:03d}.bin")
    if os.path.lexists(fn):
        os.remove(fn)
    if a.fault == "fifo" and rank == a.fault_rank and k == 2:
        os.mkfifo(fn)
        continue
    with open(fn, "wb") as f:
        for i in range(per):
            arr = rng.standard_normal(16).astype(np.float32).tobytes()
            ln = len(arr)
            if a.fault == "hugelen" and rank == a.fault_rank and k == 1 and i == 5:
                ln = 0x7FFFFF42  # bit-flipped header
            f.write(struct.pack("<I", ln)); f.write(arr)
if ws > 1:
    dist.barrier()
if a.nofile and rank == a.fault_rank:
    resource.setrlimit(resource.RLIMIT_NOFILE, (a.nofile, a.nofile))
    print(f"[rank{rank}] host limit: open files = {a.nofile}", flush=True)

class Packed(Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d))
    def __len__(self):
        return nfiles * per
    def __getitem__(self, i):
        time.sleep(a.sleep)
        fn = self.files[i // per]
        with open(fn, "rb") as f:
            for j in range(i % per + 1):
                (ln,) = struct.unpack("<I", f.read(4))
                buf = np.frombuffer(f.read(ln), dtype=np.float32)
        x = torch.from_numpy(buf[:16].copy())
        # many small tensors per sample (e.g. per-field features)
        fields = [x[k:k + 1].clone() for k in range(16)]
        return fields, int(i % 4)

def winit(wid):
    if a.pidfile and rank == a.fault_rank and wid == 0:
        open(a.pidfile, "w").write(str(os.getpid()))

ds = Packed(d)
dl = DataLoader(ds, batch_size=a.bs, shuffle=True, num_workers=a.workers, timeout=a.dl_timeout,
                worker_init_fn=winit, prefetch_factor=4 if a.workers else None)
torch.manual_seed(0)
model = wrap(MLP(), ws)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print(f"[rank{rank}] dataset={len(ds)} batches={len(dl)} workers={a.workers}", flush=True)
step = 0
t0 = time.time()
for ep in range(a.epochs):
    for fields, y in dl:
        x = torch.cat(fields, dim=1)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step(); step += 1
        if step % 4 == 0:
            print(f"[rank{rank}] epoch={ep} step={step} loss={loss.item():.4f} {step*a.bs/(time.time()-t0):.1f} samples/s", flush=True)
if ws > 1:
    dist.barrier(); dist.destroy_process_group()
print(f"[rank{rank}] finished {step} steps", flush=True)
