"""torch.multiprocessing.spawn launcher: DDP over a compiled tabular model; each rank reads its own feature shard."""
import argparse, os, sys, time, datetime
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=47010)
p.add_argument("--fault", default="none", choices=["none", "extra-column", "dynamic-batch"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

FEATURES = ["age", "income", "tenure", "visits", "clicks", "spend", "region", "segment"]

def make_shard(rank, extra):
    g = torch.Generator().manual_seed(rank)
    cols = list(FEATURES)
    if extra:
        cols.append("customer_id")     # id column not dropped by this shard's preprocessing
    X = torch.randn(256, len(cols), generator=g)
    y = (X[:, 0] + X[:, 1] > 0).long()
    return cols, X, y

class Tab(nn.Module):
    def __init__(self, d_in=len(FEATURES)):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    def forward(self, x):
        if x.shape[0] == 32:              # full batch: use the fused path
            return self.net(x)
        return self.net(x) * 1.0

def worker(rank, world, a):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=40))
    torch.manual_seed(0)
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(torch.compile(Tab()))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    faulty = a.fault != "none" and rank == a.fault_rank
    cols, X, y = make_shard(rank, faulty and a.fault == "extra-column")
    print(f"[rank {rank}] shard columns={len(cols)} rows={X.shape[0]}", flush=True)
    for step in range(a.steps):
        xb = X[step * 32:(step + 1) * 32]; yb = y[step * 32:(step + 1) * 32]
        if faulty and a.fault == "dynamic-batch":
            torch._dynamo.mark_dynamic(xb, 0)    # batch size varies in production, avoid recompiles
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        opt.zero_grad(); loss.backward(); opt.step()
        acc = (out.argmax(1) == yb).float().mean().item()
        print(f"[rank {rank}] step {step} loss={loss.item():.4f} acc={acc:.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
