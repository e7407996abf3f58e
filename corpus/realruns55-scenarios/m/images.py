"""Image folder pipeline (PIL) with torch.multiprocessing.spawn + gloo DDP."""
import argparse, os, glob, io, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from PIL import Image
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--root", default="/work/rr55/m/data/images/train")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--port", default="30130")
p.add_argument("--no-guard", action="store_true")
args = p.parse_args()

class ImageFolderDS(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*", "*.png")))
        self.classes = sorted({os.path.basename(os.path.dirname(f)) for f in self.files})
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        f = self.files[i]
        img = Image.open(f).convert("RGB").resize((16, 16))
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.).permute(2, 0, 1)
        return x, self.classes.index(os.path.basename(os.path.dirname(f)))

def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    ds = ImageFolderDS(args.root)
    print(f"[rank {rank}] {len(ds)} images, {len(ds.classes)} classes", flush=True)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    dl = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=args.workers)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, max(2, len(ds.classes)))))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if rank == 0: print(f"epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0: print("done", flush=True)
    dist.destroy_process_group()

if args.no_guard:
    # refactored into a module-level entry point (no __main__ guard)
    mp.start_processes(worker, args=(args.nprocs,), nprocs=args.nprocs, start_method="spawn")
elif __name__ == "__main__":
    mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs)
