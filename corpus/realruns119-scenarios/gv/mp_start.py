"""Tiny trainer using multiprocessing (family: start-method / pickling set-up)."""
import argparse, logging, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

class Toy(Dataset):
    def __init__(self, n=256):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g); self.y = self.x.sum(1, keepdim=True)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

def worker(rank, world, port, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 5)
    ds = Toy()
    for step in range(steps):
        if step == 0:
            sched.step()
        idx = torch.randint(0, len(ds), (16,))
        x, y = ds.x[idx], ds.y[idx]
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            logging.info("step %d loss %.4f lr %.4g", step, loss.item(), opt.param_groups[0]["lr"])
    dist.barrier()
    if rank == 0:
        logging.info("done")
    dist.destroy_process_group()

def run_loader(ctx, local_collate, steps=10):
    ds = Toy()
    if local_collate:
        scale = 2.0
        def collate(batch):   # closure: not picklable for spawn workers
            xs, ys = zip(*batch)
            return torch.stack(xs) * scale, torch.stack(ys) * scale
        kw = dict(collate_fn=collate)
    else:
        kw = {}
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, multiprocessing_context=ctx, **kw)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for i, (x, y) in enumerate(dl):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if i % 5 == 0:
                print(f"epoch {epoch} it {i} loss {loss.item():.4f}", flush=True)
    print("training finished", flush=True)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["spawn-ok", "spawn-lambda", "loader-local-collate", "loader-ok"], required=True)
    p.add_argument("--port", type=int, default=45410)
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--steps", type=int, default=15)
    a = p.parse_args()
    if a.mode == "spawn-ok":
        mp.spawn(worker, args=(a.nprocs, a.port, a.steps), nprocs=a.nprocs, join=True)
    elif a.mode == "spawn-lambda":
        # wrapper lambda to bind args the "easy" way
        fn = lambda rank: worker(rank, a.nprocs, a.port, a.steps)
        mp.spawn(lambda r, *_: fn(r), nprocs=a.nprocs, join=True)
    elif a.mode == "loader-local-collate":
        run_loader("spawn", True)
    else:
        run_loader("spawn", False)

if __name__ == "__main__":
    main()
