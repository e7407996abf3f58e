"""Image-like DataLoader with worker processes; used with a small /dev/shm (container default 64 MB)."""
import os, sys, time, shutil
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler
from common import base_args, init_dist

class ImgDS(Dataset):
    def __init__(self, n, res): self.n, self.res = n, res
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, self.res, self.res, generator=g), i % 10

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 8, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10))
    def forward(self, x): return self.f(x)

def main():
    p = base_args(); p.add_argument("--res", type=int, default=224); p.add_argument("--bs", type=int, default=16)
    p.add_argument("--progress", action="store_true"); p.add_argument("--prefetch", type=int, default=2)
    args = p.parse_args()
    rank, world = init_dist()
    tot = shutil.disk_usage("/dev/shm").total
    print(f"[rank{rank}] /dev/shm size {tot/2**20:.0f} MiB, workers={args.workers}, batch {args.bs}x3x{args.res}x{args.res}", flush=True)
    ds = ImgDS(2048, args.res)
    sampler = DistributedSampler(ds) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, num_workers=args.workers, prefetch_factor=args.prefetch if args.workers else None)
    model = Net(); model = DDP(model) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    it = dl
    if args.progress:
        from tqdm import tqdm
        it = tqdm(dl, total=args.steps, disable=rank != 0, ncols=100)
    for step, (x, y) in enumerate(it):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if not args.progress or step % 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
        if step + 1 >= args.steps: break
    if world > 1: dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

if __name__ == "__main__":
    main()
