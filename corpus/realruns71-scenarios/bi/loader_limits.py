"""DDP training fed by a multi-worker DataLoader; knobs for sample size, sharing
strategy, per-sample file handling and per-sample parsing, to exercise OS limits."""
import argparse, os, sys, json, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--img", type=int, default=64, help="side of the synthetic image")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--prefetch", type=int, default=2)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--n", type=int, default=512)
p.add_argument("--sharing", default=None, help="torch.multiprocessing sharing strategy")
p.add_argument("--crops", type=int, default=0, help="return this many separate crop tensors per sample (multi-crop)")
p.add_argument("--shard-dir", default=None, help="read one small .bin file per sample from here")
p.add_argument("--keep-open", action="store_true", help="cache open file handles per sample (fast path)")
p.add_argument("--meta-depth", type=int, default=0, help="nesting depth of the json metadata of each sample")
p.add_argument("--meta-rank", type=int, default=-1, help="only this rank's shard has deep metadata (-1: all)")
p.add_argument("--aug-iters", type=int, default=0, help="extra CPU augmentation passes per sample")
p.add_argument("--aug-rank", type=int, default=-1)
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--keep-batches", type=int, default=0, help="keep every Nth input batch for the end-of-epoch visualisation")
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.logging:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s", stream=sys.stdout)
log = logging.getLogger("loader")
def say(m):
    if args.logging: log.info(m)
    else: print(m, flush=True)

if args.sharing:
    torch.multiprocessing.set_sharing_strategy(args.sharing)

class Synth(Dataset):
    def __init__(self):
        self.handles = {}
        deep = args.meta_depth and (args.meta_rank < 0 or args.meta_rank == rank)
        self.meta = ("[" * args.meta_depth + '{"label": 1}' + "]" * args.meta_depth) if deep else '[{"label": 1}]'
        sys.setrecursionlimit(max(1000, args.meta_depth * 4))
    def __len__(self): return args.n
    def _read(self, i):
        path = os.path.join(args.shard_dir, f"{i % 4096:05d}.bin")
        if args.keep_open:
            f = self.handles.get(i)
            if f is None:
                f = self.handles[i] = open(path, "rb")
            f.seek(0); return f.read()
        with open(path, "rb") as f:
            return f.read()
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, args.img, args.img, generator=g)
        if args.shard_dir:
            raw = self._read(i)
            img[0, 0, : len(raw)] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)[: args.img].float() / 255
        meta = json.loads(self.meta)
        if args.aug_iters and (args.aug_rank < 0 or args.aug_rank == rank):
            for _ in range(args.aug_iters):
                img = torch.nn.functional.avg_pool2d(img[None], 3, 1, 1)[0]
        y = torch.tensor(i % 10)
        if args.crops:
            return [img[:, :16, :16].clone() for _ in range(args.crops)], y
        return img, y

def main():
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    torch.manual_seed(0)
    ds = Synth()
    sampler = DistributedSampler(ds, shuffle=True) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.batch, num_workers=args.workers, sampler=sampler,
                    shuffle=sampler is None, prefetch_factor=args.prefetch if args.workers else None,
                    persistent_workers=args.workers > 0, timeout=args.timeout)
    inp = 3 * 16 * 16 if args.crops else 3 * args.img * args.img
    model = nn.Sequential(nn.Flatten(), nn.Linear(inp, 64), nn.ReLU(), nn.Linear(64, 10))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    say(f"[rank {rank}] dataset={len(ds)} batch={args.batch} workers={args.workers} sharing={torch.multiprocessing.get_sharing_strategy()}")
    step = 0; t0 = time.time()
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"epoch 0", ncols=100)
    epoch = 0
    kept = []
    while step < args.steps:
        if sampler is not None: sampler.set_epoch(epoch)
        for x, y in dl:
            if args.crops:
                x = torch.stack(x).mean(0)
            if args.keep_batches and step % args.keep_batches == 0:
                kept.append(x)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if bar is not None:
                bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
            elif step % 3 == 0:
                say(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} {step*args.batch/(time.time()-t0):.1f} samples/s")
            if step >= args.steps: break
        epoch += 1
    if bar is not None: bar.close()
    say(f"[rank {rank}] done: {step} steps in {time.time()-t0:.1f}s")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
