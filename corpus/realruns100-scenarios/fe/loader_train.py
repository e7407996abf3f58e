"""DDP (or mp.spawn) training fed by a multi-worker DataLoader; flags select OS-side faults."""
import argparse, datetime, os, sys, time, warnings
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

class FeatureSet(Dataset):
    """Each item returns a list of per-frame feature tensors (variable-length clip split into frames)."""
    def __init__(self, n, frames, dim): self.n, self.frames, self.dim = n, frames, dim
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return [torch.randn(self.dim, generator=g) for _ in range(self.frames)], i % 10

def collate(batch):
    return [torch.stack([b[0][f] for b in batch]) for f in range(len(batch[0][0]))], torch.tensor([b[1] for b in batch])

def run(rank, world, a):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if a.spawn:
        os.environ["MASTER_PORT"] = str(a.port)
    if a.sharing:
        mp.set_sharing_strategy(a.sharing)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    ds = FeatureSet(a.samples, a.frames, a.dim)
    dl = DataLoader(ds, batch_size=a.bs, sampler=DistributedSampler(ds, world, rank), num_workers=a.workers,
                    collate_fn=collate, persistent_workers=a.workers > 0, prefetch_factor=a.prefetch if a.workers else None)
    model = DDP(nn.Sequential(nn.Linear(a.dim, 128), nn.ReLU(), nn.Linear(128, 10)), find_unused_parameters=a.find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for ep in range(a.epochs):
        dl.sampler.set_epoch(ep)
        for frames, y in dl:
            x = torch.stack(frames).mean(0)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 10 == 0:
                print(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
            time.sleep(a.sleep)
        print(f"[rank{rank}] epoch {ep} done, {step} steps", flush=True)
    dist.barrier()
    print(f"[rank{rank}] finished", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
    p.add_argument("--port", type=int, default=42470)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--sharing", default="")
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--frames", type=int, default=4)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--bs", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--sleep", type=float, default=0.02)
    p.add_argument("--find-unused", action="store_true")
    a = p.parse_args()
    if a.spawn:
        mp.spawn(run, args=(a.spawn, a), nprocs=a.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a)
