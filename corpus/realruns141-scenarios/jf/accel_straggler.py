"""accelerate (MULTI_CPU / gloo) run where one rank's shard is stored in a slow legacy format.

Shards: each rank reads shard_<rank>. --slow-rank's shard was exported as gzip'd JSON text per record
(decoded per sample), the others as a numpy array. Per-step data/compute times are logged with timestamps.
--pg-timeout small + --records-kb large makes the other ranks give up in the gradient all-reduce.
"""
import argparse, datetime, gzip, json, logging, os, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator, InitProcessGroupKwargs

p = argparse.ArgumentParser()
p.add_argument("--slow-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--record-width", type=int, default=4000)
p.add_argument("--pg-timeout", type=float, default=60)
p.add_argument("--data-dir", default="/tmp/jf_accel_shards")
p.add_argument("--make-only", type=int, default=0)
args = p.parse_args()

torch.set_num_threads(1)
W = args.record_width
N = 256
os.makedirs(args.data_dir, exist_ok=True)
rank = int(os.environ.get("RANK", 0))
rng = np.random.default_rng(rank)
feats = rng.standard_normal((N, W)).astype(np.float32)
labels = (feats[:, :8].sum(1) > 0).astype(np.int64)
if rank == args.slow_rank:
    path = os.path.join(args.data_dir, f"shard_{rank}.jsonl.gz")
if rank == args.slow_rank and not os.path.exists(path):
    with gzip.open(path, "wt", compresslevel=9) as f:
        for i in range(N):
            f.write(json.dumps({"x": [float(v) for v in feats[i]], "y": int(labels[i])}) + "\n")
elif rank != args.slow_rank:
    path = os.path.join(args.data_dir, f"shard_{rank}.npz")
    np.savez(path, x=feats, y=labels)
if args.make_only:
    raise SystemExit(0)
acc = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=args.pg_timeout))])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{acc.process_index}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
log.info("distributed_type=%s num_processes=%d", acc.distributed_type, acc.num_processes)

log.info("shard %s (%d records, %.1f MB)", path, N, os.path.getsize(path) / 1e6)


class Shard(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path = path
        if path.endswith(".npz"):
            d = np.load(path)
            self.x, self.y = d["x"], d["y"]

    def __len__(self):
        return N

    def __getitem__(self, i):
        if self.path.endswith(".npz"):
            return torch.from_numpy(self.x[i]), int(self.y[i])
        # legacy export: re-open and scan the compressed text for every sample
        with gzip.open(self.path, "rt") as f:
            for j, line in enumerate(f):
                if j == i:
                    rec = json.loads(line)
                    return torch.tensor(rec["x"]), rec["y"]


dl = torch.utils.data.DataLoader(Shard(path), batch_size=16, shuffle=False)
model = nn.Sequential(nn.Linear(W, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
model, opt = acc.prepare(model, opt)  # dataloader kept per-rank (each rank owns its shard)

step = 0
t_prev = time.time()
while step < args.steps:
    for xb, yb in dl:
        t_data = time.time() - t_prev
        t0 = time.time()
        loss = F.cross_entropy(model(xb), yb)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        t_comp = time.time() - t0
        step += 1
        log.info("step %d/%d loss=%.4f data_time=%.3fs compute+allreduce=%.3fs", step, args.steps, loss.item(), t_data, t_comp)
        t_prev = time.time()
        if step >= args.steps:
            break
acc.wait_for_everyone()
log.info("done")
acc.end_training()
