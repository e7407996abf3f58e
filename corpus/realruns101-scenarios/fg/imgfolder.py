"""Image-folder classification with DDP (gloo, CPU).  Flags choose data dir / transforms / launcher."""
import argparse, os, glob, time, logging, sys, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from PIL import Image

p = argparse.ArgumentParser()
p.add_argument("--data", default="data/imgs_ok")
p.add_argument("--ext", default="jpg")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--to-tensor", type=int, default=1)
p.add_argument("--resize", type=int, default=1)
p.add_argument("--shard-by-rank", type=int, default=0, help="each rank reads its own class dir")
p.add_argument("--logfmt", default="print")
p.add_argument("--tqdm", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))

class ImageFolderDS(Dataset):
    def __init__(self, root, ext, classes=None):
        self.classes = sorted(os.listdir(root)) if classes is None else classes
        self.items = []
        for ci, c in enumerate(sorted(os.listdir(root))):
            if classes is not None and c not in classes: continue
            for f in sorted(glob.glob(os.path.join(root, c, f"*.{ext}"))):
                self.items.append((f, ci))
    def __len__(self): return len(self.items)
    def __getitem__(self, i):
        path, y = self.items[i]
        im = Image.open(path).convert("RGB")
        if args.resize: im = im.resize((32, 32))
        if not args.to_tensor: return im, y
        x = torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.).permute(2, 0, 1)
        return x, y

classes = None
if args.shard_by_rank:
    classes = [sorted(os.listdir(args.data))[rank % 2]]
ds = ImageFolderDS(args.data, args.ext, classes)
log(f"dataset {args.data}: {len(ds)} images, classes={ds.classes}")
sampler = DistributedSampler(ds, shuffle=True, seed=0) if (world > 1 and not args.shard_by_rank) else None
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=(sampler is None), num_workers=args.workers, drop_last=True)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 2))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
step = 0
for ep in range(args.epochs):
    if sampler is not None: sampler.set_epoch(ep)
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch {ep}")
    for x, y in it:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); step += 1
        if step % 4 == 0: log(f"epoch {ep} step {step} loss {loss.item():.4f}")
    log(f"epoch {ep} done")
if world > 1:
    dist.barrier(); dist.destroy_process_group()
log("training finished")
