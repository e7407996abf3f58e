"""DataLoader worker configuration scenarios (timeouts, killed workers, spawn pickling, fds, options)."""
import argparse, os, sys, time, stat, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, IterableDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=1)
p.add_argument("--persistent", type=int, default=0)
p.add_argument("--prefetch", type=int, default=None)
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--ctx", default=None)
p.add_argument("--feature-store", default=None, help="path of a feature file/pipe read for one sample")
p.add_argument("--store-rank", type=int, default=-1)
p.add_argument("--crops", type=int, default=1, help="multi-crop augmentation: crops per sample")
p.add_argument("--sharing", default=None)
p.add_argument("--iterable", type=int, default=0)
p.add_argument("--shuffle", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--n", type=int, default=512)
p.add_argument("--slow", type=float, default=0.0)
p.add_argument("--transform", default="scale")
p.add_argument("--pidfile", default=None)
p.add_argument("--no-guard", type=int, default=0, help="old notebook-exported entry point without a __main__ guard")
args = p.parse_args()

class Synthetic(Dataset):
    def __init__(self, n, transform, rank):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g); self.y = (self.x.sum(1) > 0).long()
        self.transform = transform; self.rank = rank
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        if args.slow: time.sleep(args.slow)
        x = self.x[i]
        if args.feature_store and i % 97 == 5 and self.rank == args.store_rank:
            with open(args.feature_store, "rb") as f:   # cached precomputed feature on shared storage
                extra = np.frombuffer(f.read(128), dtype=np.float32)
            x = x + torch.from_numpy(extra.copy()).mean()
        if args.crops > 1:
            return [self.transform(x + 0.01 * k) for k in range(args.crops)], self.y[i]
        return self.transform(x), self.y[i]

class Stream(IterableDataset):
    def __init__(self, n): self.n = n
    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        for _ in range(self.n):
            x = torch.randn(32, generator=g); yield x, int(x.sum() > 0)

def worker_init(wid):
    if args.pidfile:
        with open(args.pidfile, "a") as f: f.write(f"{os.environ.get('RANK','0')} {wid} {os.getpid()}\n")

def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1: dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if args.sharing: torch.multiprocessing.set_sharing_strategy(args.sharing)
    scale = 0.5
    transform = {"scale": (lambda x: x * scale), "identity": torch.clone}[args.transform]
    ds = Stream(args.n) if args.iterable else Synthetic(args.n, transform, rank)
    sampler = DistributedSampler(ds) if (world > 1 and not args.iterable) else None
    kw = dict(batch_size=16, num_workers=args.workers, persistent_workers=bool(args.persistent), timeout=args.timeout,
              worker_init_fn=worker_init, multiprocessing_context=args.ctx)
    if args.prefetch is not None: kw["prefetch_factor"] = args.prefetch
    if sampler is None: kw["shuffle"] = bool(args.shuffle)
    dl = DataLoader(ds, sampler=sampler, **kw)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    if world > 1: model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = 0
    for ep in range(args.epochs):
        if sampler is not None: sampler.set_epoch(ep)
        t0 = time.time()
        for x, y in dl:
            if isinstance(x, list): x = torch.stack(x).mean(0)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 8 == 0: print(f"[rank{rank}] ep {ep} step {step} loss {loss.item():.4f}", flush=True)
        print(f"[rank{rank}] epoch {ep} took {time.time() - t0:.1f}s", flush=True)
    print(f"[rank{rank}] done", flush=True)
    if world > 1: dist.destroy_process_group()

if args.no_guard:
    main()
elif __name__ == "__main__":
    main()
