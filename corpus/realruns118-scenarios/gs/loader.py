"""Image-like regression training with a DataLoader; faults in workers / shared memory / pin memory."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "big-batch", "fd-sharing", "worker-augment", "pin", "near-shm", "hold-batches", "sampler-mismatch"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--img", type=int, default=32)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--sharing", default="")
p.add_argument("--tslog", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N ranks")
p.add_argument("--port", default="45260")
a = p.parse_args()

class Synth(Dataset):
    def __init__(s, n, img, fault, rank):
        s.n, s.img, s.fault, s.rank = n, img, fault, rank
    def __len__(s):
        return s.n
    def __getitem__(s, i):
        g = np.random.default_rng(i)
        x = g.standard_normal((3, s.img, s.img), dtype=np.float32)
        if s.fault == "worker-augment" and s.rank == a.fault_rank and i % 97 == 13:
            # multi-scale augmentation: upsample by 16x with numpy for random crop (float64 intermediate)
            big = np.kron(x, np.ones((1, 256, 256)))
            x = big[:, :s.img, :s.img].astype(np.float32)
        if s.fault == "fd-sharing":
            # return every channel row as its own tensor (per-row crops)
            return [torch.from_numpy(x[c, r].copy()) for c in range(3) for r in range(s.img)], torch.tensor([float(x.mean())])
        return torch.from_numpy(x), torch.tensor([float(x.mean())])

def collate_rows(b):
    return b

def main(rank, world):
    if a.tslog:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s", force=True)
    else:
        logging.basicConfig(level=logging.INFO, format="[%(levelname)s] %(message)s", force=True)
    log = logging.getLogger("loader")
    torch.set_num_threads(1)
    if a.sharing:
        torch.multiprocessing.set_sharing_strategy(a.sharing)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    ds = Synth(4096, a.img, a.fault, rank)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    kw = dict(batch_size=a.bs, num_workers=a.workers, sampler=sampler, shuffle=sampler is None)
    if a.fault == "pin" or a.fault == "near-shm":
        kw["pin_memory"] = True
    if a.workers:
        kw["prefetch_factor"] = 4 if a.fault in ("near-shm", "big-batch") else 2
        kw["persistent_workers"] = True
    if a.fault == "fd-sharing":
        kw["collate_fn"] = collate_rows
    dl = DataLoader(ds, **kw)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 1))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log.info("dataset=%d batch=%d workers=%d img=%d world=%d", len(ds), a.bs, a.workers, a.img, world)
    step = 0
    held = []
    it = dl
    if a.use_tqdm:
        from tqdm import tqdm
        it = tqdm(dl, total=a.steps, desc=f"epoch 0 [rank {rank}]", mininterval=0)
    for batch in (it if a.fault != "fd-sharing" else dl):
        if a.fault == "fd-sharing":
            xb = torch.stack([torch.stack(s[0]).view(3, a.img, a.img) for s in batch]); yb = torch.stack([s[1] for s in batch])
            held.append(batch)  # keep raw rows for the per-sample loss report
        else:
            xb, yb = batch
        if a.fault == "hold-batches":
            held.append(xb)
        out = model(xb)
        loss = F.mse_loss(out, yb)
        opt.zero_grad(); loss.backward(); opt.step()
        if not a.use_tqdm:
            log.info("step %d loss %.5f", step, loss.item())
        step += 1
        if step >= a.steps:
            break
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log.info("done: %d steps", step)

if __name__ == "__main__":
    if a.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = a.port
        torch.multiprocessing.spawn(main, args=(a.spawn,), nprocs=a.spawn)
    else:
        main(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
