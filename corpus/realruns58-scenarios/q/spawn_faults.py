"""mp.spawn DDP trainer reading .npy shards through a DataLoader; fault selection (realrun set 58 q)."""
import argparse, os, sys, glob, time, logging
from datetime import timedelta
import numpy as np, torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "corrupt", "fds", "optim", "dlkill"])
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=29930)
p.add_argument("--data", default="/work/rr58/q/data/shards")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

class Shards(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.handles = {}
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        f = self.files[i]
        if args.fault == "fds":
            # keep shard files memory-mapped for speed (handles cached, never closed)
            if f not in self.handles:
                self.handles[f] = open(f, "rb")
            fh = self.handles[f]; fh.seek(0)
            a = np.load(fh)
        else:
            a = np.load(f)
        x = torch.from_numpy(a[:16].astype(np.float32)); y = torch.from_numpy(a[16:20].astype(np.float32))
        return x, y

def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s %(processName)s rank={rank} %(message)s", force=True)
    log = logging.getLogger("spawn")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    ds = Shards(args.data)
    log.info(f"dataset: {len(ds)} shards in {args.data}")
    dl = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, world, rank, shuffle=True, seed=0), num_workers=args.workers)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if args.fault == "optim":
        head = [p for n, p in model.named_parameters() if n.startswith("2.")]
        body = [p for n, p in model.named_parameters() if not n.startswith("2.")]
        opt = torch.optim.AdamW([{"params": body, "lr": 1e-3}, {"params": head, "lr": 1e-2}])
        ck = torch.load("/work/rr58/q/data/ckpt/clean.pt", map_location="cpu")
        model.load_state_dict(ck["model"])
        log.info("loaded model weights from clean.pt; restoring optimizer state")
        opt.load_state_dict(ck["optim"])
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ddp = nn.parallel.DistributedDataParallel(model)
    step = 0
    for ep in range(args.epochs):
        dl.sampler.set_epoch(ep)
        for x, y in dl:
            if args.fault == "dlkill" and rank == world - 1 and step == 3:
                open("/work/rr58/q/data/dlkill.ready", "w").write(str(os.getpid()))
                time.sleep(6)
            loss = nn.functional.mse_loss(ddp(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0:
                log.info(f"epoch={ep} step={step} loss={loss.item():.4f}")
            step += 1
    dist.barrier(); dist.destroy_process_group()
    log.info("finished")

if __name__ == "__main__":
    mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
