"""Image-classification training on per-rank image shards (DDP, gloo, CPU).
Prepare:  python imgdata.py --prepare DIR --fault F --bad-rank R --bad-step S
Train:    torchrun ... imgdata.py --data DIR [--workers N] ...
"""
import argparse, os, sys, glob, time, io, random, warnings
import numpy as np
from PIL import Image, ImageFile
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--per-rank", type=int, default=64)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--cache-handles", action="store_true")
p.add_argument("--stamp", action="store_true")
p.add_argument("--from-manifest", action="store_true")
p.add_argument("--skip-bad", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--img-size", type=int, default=32)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--mport", type=int, default=45800)
args = p.parse_args()

def prepare():
    root = args.prepare
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    S = args.img_size
    for r in range(args.nranks):
        d = os.path.join(root, f"rank{r}")
        os.makedirs(d, exist_ok=True)
        ext = "jpg"
        if args.fault == "empty" and r == args.bad_rank:
            ext = "jpeg"   # exporter wrote a different extension for this shard
        lines = []
        for i in range(args.per_rank):
            arr = (rng.random((S, S, 3)) * 255).astype(np.uint8)
            arr[: S // 2] //= 2
            fn = os.path.join(d, f"img_{i:05d}.{ext}")
            Image.fromarray(arr).save(fn, quality=90)
            lines.append(f"{fn}\t{i % 10}")
        bad = args.bad_step * args.bs + 2
        if r == args.bad_rank:
            fn = os.path.join(d, f"img_{bad:05d}.{ext}")
            if args.fault == "corrupt":
                # crawler saved an HTML error page under an image name
                with open(fn, "wb") as f:
                    f.write(b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head><body>Access denied</body></html>\n")
            elif args.fault == "truncated":
                big = (rng.random((256, 256, 3)) * 255).astype(np.uint8)
                b = io.BytesIO(); Image.fromarray(big).save(b, format="JPEG", quality=95)
                data = b.getvalue()
                with open(fn, "wb") as f:
                    f.write(data[: len(data) // 2])   # interrupted download
            elif args.fault == "varsize":
                arr = (rng.random((S + 8, S, 3)) * 255).astype(np.uint8)
                Image.fromarray(arr).save(fn, quality=90)
            elif args.fault == "missing":
                os.remove(fn)
            elif args.fault == "perm":
                os.chmod(fn, 0o000)
            elif args.fault in ("bomb", "bigwarn"):
                n = 14000 if args.fault == "bomb" else 10000
                Image.new("L", (n, n), 128).save(fn.replace(".jpg", ".png"))
                os.remove(fn)
                lines[bad] = f"{fn.replace('.jpg', '.png')}\t{bad % 10}"
            elif args.fault == "fifo":
                os.remove(fn)
                os.mkfifo(fn)   # object-store fuse path that never delivers data
        with open(os.path.join(root, f"manifest_rank{r}.tsv"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("prepared", root)

class ImageFolderShard(Dataset):
    def __init__(self, root, rank, size, cache_handles=False):
        self.files = sorted(glob.glob(os.path.join(root, f"rank{rank}", "*.jpg")) +
                            glob.glob(os.path.join(root, f"rank{rank}", "*.png")))
        if args.from_manifest:
            with open(os.path.join(root, f"manifest_rank{rank}.tsv")) as f:
                self.files = [l.split("\t")[0] for l in f if l.strip()]
        self.size = size
        self.cache_handles = cache_handles
        self._handles = {}
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if args.skip_bad:
            for k in range(len(self.files)):
                j = (i + k) % len(self.files)
                try:
                    return self._load(j)
                except Exception as e:
                    import logging
                    logging.getLogger("imgtrain.data").error(f"failed to load sample {j} ({self.files[j]}): {type(e).__name__}: {e} -- skipping")
        return self._load(i)
    def _load(self, i):
        path = self.files[i]
        if self.cache_handles:
            # keep handles open to avoid re-opening files on the network FS
            if path not in self._handles:
                self._handles[path] = open(path, "rb")
            fh = self._handles[path]; fh.seek(0)
            img = Image.open(fh).convert("RGB")
        else:
            img = Image.open(path).convert("RGB")
        if img.size[0] != self.size:
            img = img.resize((self.size, self.size))
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        y = int(os.path.basename(path).split("_")[1].split(".")[0]) % 10
        return x, y

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1); self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))

def train(rank, world):
    log = common.get_logger("imgtrain", rank, stamp=args.stamp)
    torch.manual_seed(0)
    ds = ImageFolderShard(args.data, rank, args.img_size, cache_handles=args.cache_handles)
    log.info(f"dataset shard rank{rank}: {len(ds)} images, num_workers={args.workers}")
    dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers,
                    timeout=args.dl_timeout, generator=torch.Generator().manual_seed(rank),
                    persistent_workers=False)
    model = Net()
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for ep in range(args.epochs):
        it = dl
        if args.use_tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", file=sys.stderr, mininterval=0)
        for x, y in it:
            out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            acc = (out.argmax(1) == y).float().mean().item()
            if step % 2 == 0:
                log.info(f"epoch {ep} step {step} loss {loss.item():.4f} acc {acc:.3f}")
            step += 1
    log.info(f"training finished after {step} steps")

def spawn_main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.mport)
    import datetime, torch.distributed as dist
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    train(rank, world)
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.prepare:
        prepare(); sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        rank, world = common.setup(30)
        train(rank, world)
        common.cleanup()
