"""Distributed evaluation: per-rank confusion matrices summed with all_reduce (no DDP)."""
import argparse, os, time
from datetime import timedelta
import numpy as np, torch, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--data", default="data")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--batches", type=int, default=8)
a = p.parse_args()
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
z = np.load(os.path.join(a.data, f"shard-{rank}.npz"))
x, y = torch.from_numpy(z["x"]), torch.from_numpy(z["y"])
torch.manual_seed(0)
W = torch.randn(x.shape[1], 10)
print(f"[eval rank {rank}/{world}] {len(y)} samples, label range {int(y.min())}..{int(y.max())}", flush=True)
correct = torch.zeros(1)
for b in range(a.batches):
    xb, yb = x[b * 64:(b + 1) * 64], y[b * 64:(b + 1) * 64]
    pred = (xb @ W).argmax(1)
    correct += (pred == yb).sum()
    dist.all_reduce(t := torch.tensor([float(len(yb))]))
    if rank == 0:
        print(f"[eval rank 0] batch {b}: running acc {float(correct) / ((b + 1) * 64):.3f}", flush=True)
    time.sleep(0.1)
num_classes = int(y.max()) + 1          # number of classes seen in this shard
conf = torch.zeros(num_classes, num_classes, dtype=torch.int64)
pred = (x @ W).argmax(1)
for t_, p_ in zip(y.tolist(), pred.tolist()):
    conf[t_, p_] += 1
dist.all_reduce(conf)
dist.all_reduce(correct)
if rank == 0:
    print(f"[eval] global accuracy {float(correct) / (len(y) * world):.4f}")
    print("[eval] per-class recall:", (conf.diag().float() / conf.sum(1).clamp(min=1)).numpy().round(3).tolist())
dist.destroy_process_group()
