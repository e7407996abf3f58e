"""Open-file limit scenarios: DataLoader fd passing, memmap data shards."""
import os, sys, glob, time
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP
from common import base_args, init_dist, TinyNet

class MultiFieldDS(Dataset):
    """Each sample is a dict of many small per-token feature tensors (like a feature store)."""
    def __init__(self, n=512, fields=24):
        self.n, self.fields = n, fields
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        d = {f"f{k}": torch.randn(2, generator=g) for k in range(self.fields)}
        d["x"] = torch.randn(32, generator=g); d["y"] = torch.tensor(i % 4)
        return d

class ShardDS(Dataset):
    def __init__(self, files):
        self.arrs = [np.load(f, mmap_mode="r") for f in files]   # keeps one mmap (dup'ed fd) per shard
        self.idx = [(a, j) for a in range(len(self.arrs)) for j in range(self.arrs[a].shape[0])]
    def __len__(self): return len(self.idx)
    def __getitem__(self, i):
        a, j = self.idx[i]; row = np.asarray(self.arrs[a][j])
        return torch.from_numpy(row[:32].astype(np.float32)), torch.tensor(int(row[32]) % 4)

def make_shards(d, n):
    os.makedirs(d, exist_ok=True)
    if len(glob.glob(f"{d}/*.npy")) >= n: return
    rng = np.random.default_rng(0)
    for k in range(n):
        np.save(f"{d}/shard_{k:05d}.npy", rng.standard_normal((4, 33)).astype(np.float32))

def main():
    p = base_args(); p.add_argument("--shards", default="/work/rr86/de/tmp/shards"); p.add_argument("--nshards", type=int, default=600)
    p.add_argument("--keep-feats", action="store_true"); p.add_argument("--sharing", default="")
    args = p.parse_args()
    rank, world = init_dist()
    if args.sharing:
        torch.multiprocessing.set_sharing_strategy(args.sharing)
    import resource
    print(f"[rank{rank}] RLIMIT_NOFILE={resource.getrlimit(resource.RLIMIT_NOFILE)} workers={args.workers}", flush=True)
    torch.manual_seed(0)
    model = TinyNet()
    if world > 1: model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.fault == "ckpt-handles":
        d = args.shards + "_ckpt"
        if rank == 0 and not os.path.exists(f"{d}/index.txt"):
            os.makedirs(d, exist_ok=True)
            for k in range(args.nshards):
                torch.save({f"layer{k}.weight": torch.randn(8, 8)}, f"{d}/model-{k:05d}-of-{args.nshards:05d}.bin")
            open(f"{d}/index.txt", "w").write("ok")
        if world > 1: dist.barrier()
        files = sorted(glob.glob(f"{d}/model-*.bin"))
        print(f"[rank{rank}] loading sharded checkpoint: {len(files)} shards", flush=True)
        handles = {f: open(f, "rb") for f in files}      # lazy loader: keep handles, read tensors on demand
        sd = {}
        for f, h in handles.items():
            sd.update(torch.load(h, map_location="cpu"))
        print(f"[rank{rank}] loaded {len(sd)} tensors", flush=True)
    if args.fault == "shards":
        if rank == 0: make_shards(args.shards, args.nshards)
        if world > 1: dist.barrier()
        files = sorted(glob.glob(f"{args.shards}/*.npy"))
        # uneven split: last rank takes the remainder "tail" shards as well
        per = len(files) // (world + 1)
        mine = files[rank*per:(rank+1)*per] if rank < world - 1 else files[rank*per:]
        print(f"[rank{rank}] mapping {len(mine)} shards", flush=True)
        ds = ShardDS(mine)
        dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers)
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0: print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
            if step >= args.steps: break
    else:
        ds = MultiFieldDS()
        dl = DataLoader(ds, batch_size=8, num_workers=args.workers, shuffle=False)
        feats = []
        for step, b in enumerate(dl):
            loss = nn.functional.cross_entropy(model(b["x"]), b["y"])
            opt.zero_grad(); loss.backward(); opt.step()
            if args.keep_feats:
                feats.append({k: v for k, v in b.items() if k.startswith("f")})   # kept for the epoch-end feature report
            if step % 10 == 0: print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
            if step >= args.steps: break
    if world > 1: dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

if __name__ == "__main__":
    main()
