"""Single-node trainer with a multi-worker DataLoader and an intra-op thread pool;
used under per-user process/thread limits (ulimit -u) and CPU-time limits (ulimit -t)."""
import argparse, os, sys, time, json, threading
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads")
p.add_argument("--interop", type=int, default=0)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--async-ckpt", action="store_true", help="save every N steps from a background thread")
p.add_argument("--aug", type=int, default=0, help="CPU augmentation passes per sample")
p.add_argument("--meta-depth", type=int, default=0)
p.add_argument("--burn-rank", type=int, default=-1, help="this rank does an extra expensive metric each step")
p.add_argument("--hidden", type=int, default=256)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

class DS(Dataset):
    def __init__(self):
        self.meta = "[" * args.meta_depth + '{"y": 3}' + "]" * args.meta_depth
        if args.meta_depth: sys.setrecursionlimit(args.meta_depth * 4)
    def __len__(self): return 4096
    def __getitem__(self, i):
        x = torch.randn(1, 32, 32)
        for _ in range(args.aug):
            x = torch.nn.functional.conv2d(x[None], torch.ones(1, 1, 5, 5) / 25, padding=2)[0]
        m = json.loads(self.meta)
        return x, i % 10

def main():
    if args.threads: torch.set_num_threads(args.threads)
    if args.interop: torch.set_num_interop_threads(args.interop)
    if world > 1: dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    print(f"[rank {rank}] torch {torch.__version__} threads={torch.get_num_threads()} interop={torch.get_num_interop_threads()} workers={args.workers}", flush=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(1024, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    if world > 1: model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dl = DataLoader(DS(), batch_size=args.batch, shuffle=True, num_workers=args.workers, persistent_workers=args.workers > 0)
    step = 0; t0 = time.time(); pending = []
    for x, y in dl:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); step += 1
        if rank == args.burn_rank:
            # "exact" feature covariance metric recomputed every step (expensive)
            w = (model.module if world > 1 else model)[1].weight.detach()
            for _ in range(40):
                torch.linalg.svdvals(w @ w.T + torch.randn(args.hidden, args.hidden))
        if args.async_ckpt and step % 2 == 0:
            sd = {k: v.clone() for k, v in model.state_dict().items()}
            th = threading.Thread(target=lambda s=sd, n=step: (time.sleep(30), torch.save(s, f"/tmp/.unused_{os.getpid()}_{n}.pt")), daemon=True)
            th.start(); pending.append(th)
        if step % 4 == 0:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} elapsed {time.time()-t0:.1f}s cpu {time.process_time():.1f}s", flush=True)
        if step >= args.steps: break
    print(f"[rank {rank}] done", flush=True)
    if world > 1: dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
