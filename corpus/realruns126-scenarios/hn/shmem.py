"""Shared-memory scenarios: image-like batches produced by DataLoader workers travel through /dev/shm.
Run inside `unshare -m` with a small tmpfs mounted on /dev/shm to reproduce a container's 64M default.
--img S (side), --batch B, --workers N, --sharing, --fault-rank R (only that rank uses workers+big batches)."""
import argparse, os, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--img", type=int, default=128)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--sharing", default=None)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--augment", type=int, default=0, help="rounds of random blur per sample")
p.add_argument("--progress", action="store_true")
args = p.parse_args()
if args.sharing: mp.set_sharing_strategy(args.sharing)
dist_on = "RANK" in os.environ
if dist_on: dist.init_process_group("gloo", timeout=timedelta(seconds=40))
rank = dist.get_rank() if dist_on else 0
world = dist.get_world_size() if dist_on else 1
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
log = logging.getLogger("train")

class FakeImages(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.rand(3, args.img, args.img, generator=g)
        for _ in range(args.augment):
            k = torch.rand(3, 1, 5, 5, generator=g); k = k / k.sum((2, 3), keepdim=True)
            x = nn.functional.conv2d(x.unsqueeze(0), k, padding=2, groups=3).squeeze(0)
        return x, i % 10

class SmallCNN(nn.Module):
    def __init__(s):
        super().__init__()
        s.f = nn.Sequential(nn.Conv2d(3, 8, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        s.h = nn.Linear(128, 10)
    def forward(s, x): return s.h(s.f(x))

ds = FakeImages()
sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if dist_on else None
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None, num_workers=args.workers, prefetch_factor=4 if args.workers else None)
model = SmallCNN()
if dist_on: model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
st = os.statvfs("/dev/shm")
log.info(f"/dev/shm: {st.f_blocks*st.f_frsize//2**20} MiB total, {st.f_bavail*st.f_frsize//2**20} MiB free; "
         f"batch {args.batch}x3x{args.img}x{args.img} = {args.batch*3*args.img*args.img*4/2**20:.1f} MiB, workers={args.workers}")
it = dl
if args.progress and rank == 0:
    from tqdm import tqdm
    it = tqdm(dl, total=args.steps, desc="train")
step = 0
for x, y in it:
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); step += 1
    if step % 5 == 0: log.info(f"step {step}/{args.steps} loss={loss.item():.4f}")
    if step >= args.steps: break
log.info("done")
if dist_on: dist.destroy_process_group()
