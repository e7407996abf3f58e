"""torch.multiprocessing.spawn trainer (gloo/CPU) with periodic checkpoints and a worker DataLoader."""
import argparse, os, time, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader, DistributedSampler

class Tokens(Dataset):
    def __init__(self, n, parts): self.n, self.parts = n, parts
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        # each sample is a list of variable-length segments (kept separate, ragged)
        return [torch.randint(0, 100, (8,), generator=g) for _ in range(self.parts)], i % 5

def keep_ragged(batch):
    return batch

def worker(rank, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=a.world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    emb = nn.EmbeddingBag(100, a.width, mode="mean")
    head = nn.Linear(a.width, 5)
    model = nn.parallel.DistributedDataParallel(nn.ModuleDict({"emb": emb, "head": head}))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ds = Tokens(a.samples, a.parts)
    dl = DataLoader(ds, batch_size=a.bs, sampler=DistributedSampler(ds, a.world, rank), num_workers=a.workers,
                    collate_fn=keep_ragged, prefetch_factor=(4 if a.workers else None))
    step = 0
    for ep in range(a.epochs):
        for batch in dl:
            xs = torch.stack([torch.cat(segs) for segs, _ in batch]); ys = torch.tensor([y for _, y in batch])
            m = model.module
            loss = nn.functional.cross_entropy(m["head"](m["emb"](xs)), ys)
            # route grads through DDP wrapper: use a forward hook-free approach
            opt.zero_grad(); loss.backward()
            for p_ in model.parameters():
                if p_.grad is not None:
                    dist.all_reduce(p_.grad); p_.grad /= a.world
            opt.step(); step += 1
            if rank == 0 and step % 10 == 0:
                print(f"[rank0] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
        if rank == 0 and a.ckpt:
            os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)
            path = a.ckpt.format(epoch=ep)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "epoch": ep}, path)
            print(f"[rank0] wrote {path} ({os.path.getsize(path)/1e6:.1f} MB)", flush=True)
        dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2); p.add_argument("--port", type=int, default=29573)
    p.add_argument("--width", type=int, default=64); p.add_argument("--samples", type=int, default=640)
    p.add_argument("--parts", type=int, default=4); p.add_argument("--bs", type=int, default=16)
    p.add_argument("--workers", type=int, default=0); p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--ckpt", default="")
    a = p.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.world, join=True)
    print("all workers finished")
