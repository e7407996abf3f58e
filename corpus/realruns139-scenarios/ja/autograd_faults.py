"""Autograd / tensor bugs that sit on one rank's code branch (tiny sequence regressor under DDP, gloo, CPU)."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

T, D, H = 12, 16, 32

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--fmt", default="plain", choices=["plain", "logging"])
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", default="46787")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--no-ddp", action="store_true")
    return p.parse_args()

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D, H)
        self.gate = nn.Linear(H, H)
        self.max_len = T
    def forward(self, x):
        x = x[:, : self.max_len]
        h = self.inp(x)
        return h * torch.sigmoid(self.gate(h))

class Net(nn.Module):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault
        sparse = fault == "sparse_adam"
        self.tok = nn.Embedding(50, D, sparse=sparse)
        self.block = Block()
        self.out = nn.Linear(H, 1)
        self.bad_branch = False
        self.fault_variant = os.environ.get("POOL_LAYOUT", "flat")   # channel-first pooling path for long batches
    def forward(self, ids, x):
        x = x + self.tok(ids)
        if self.fault == "recompute" :
            h = checkpoint(self.block, x, use_reentrant=False)
        else:
            h = self.block(x)
        if self.bad_branch and self.fault == "inplace":
            s = torch.sigmoid(h)
            s.clamp_(0.01, 0.99)            # "numerically safe" clamp for outlier batches, in place
            h = h * s
        if self.bad_branch and self.fault == "view":
            h = h.transpose(1, 2).view(h.size(0), -1, h.size(1)) if self.fault_variant == "shape" else h.transpose(1, 2).view(h.size(0), -1)[:, None, :]
        if self.bad_branch and self.fault == "dtype":
            pos = torch.from_numpy(np.linspace(0, 1, h.size(1))[None, :, None])  # float64 from numpy
            h = h + pos * h                 # type promotion: h becomes float64
        return self.out(h.mean(1)).squeeze(-1)

def main_worker(rank, world, args):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", args.port)
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | %(levelname)-7s | rank={rank} | %(message)s")
        log = logging.getLogger(__name__).info
    else:
        log = lambda m: print(f"rank {rank}: {m}", flush=True)
    torch.manual_seed(1234)
    net = Net(args.fault)
    model = nn.parallel.DistributedDataParallel(net) if distributed and not args.no_ddp else net
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(100 + rank)
    memory = torch.zeros(args.bs, H)
    log(f"start: world={world} params={sum(p.numel() for p in net.parameters())}")
    for step in range(args.steps):
        ids = torch.randint(0, 50, (args.bs, T), generator=g)
        x = torch.randn(args.bs, T, D, generator=g)
        y = x[:, :, 0].mean(1) * 2.0
        w = None
        bad = rank == args.bad_rank and step >= args.bad_step
        if bad and args.fault in ("inplace", "view", "dtype"):
            net.bad_branch = True
            log(f"step {step}: batch has outliers (max |x|={x.abs().max():.2f}), using robust path")
        if bad and args.fault == "nonscalar":
            w = torch.rand(args.bs, generator=g)       # this shard carries per-sample weights
        pred = model(ids, x)
        if args.fault == "recompute" and bad:
            net.block.max_len = T - 4                 # curriculum: shrink context after a long-sequence batch
        if args.fault == "dtype" and pred.dim() == 2:
            pred = pred.squeeze(-1)
        if args.fault == "carry_memory":
            memory = 0.9 * memory + 0.1 * pred[:, None]
            pred = pred + memory.mean(1)
        if w is not None:
            loss = F.mse_loss(pred, y, reduction="none") * w
        else:
            loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.fault == "numpy" and rank == 0 and step == args.bad_step:
            p50, p90 = np.percentile(pred.numpy(), [50, 90])
            log(f"pred p50={p50:.3f} p90={p90:.3f}")
        log(f"step {step} mse={loss.item():.4f}")
    log("done")
    if distributed:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    args = get_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.spawn, args), nprocs=args.spawn)
    else:
        main_worker(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), args)
