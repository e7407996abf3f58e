"""mp.spawn launcher with stdlib logging (timestamps) and faulthandler; toy sequence model."""
import argparse, faulthandler, logging, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Seqs(Dataset):
    def __init__(self, n=256, t=12, d=8):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, t, d, generator=g)
        self.y = self.x.sum((1, 2))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def worker(rank, world, a):
    faulthandler.enable()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("spawn_train")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    with open(f"spawn_rank{rank}.pid", "w") as f:
        f.write(str(os.getpid()))
    ds = Seqs()
    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank)
    kw = dict(batch_size=16, sampler=sampler, num_workers=a.workers)
    if a.workers:
        kw["multiprocessing_context"] = "spawn"
        kw["persistent_workers"] = True
    if a.fault == "pickle":
        kw["collate_fn"] = lambda batch: tuple(torch.stack(t) for t in zip(*batch))
    dl = DataLoader(ds, **kw)
    model = nn.parallel.DistributedDataParallel(nn.GRU(8, 32, batch_first=True))
    head = nn.Linear(32, 1)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=3e-3)
    step = 0
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for x, y in dl:
            out, _ = model(x)
            pred = head(out[:, -1]).squeeze(-1)
            loss = nn.functional.mse_loss(pred, y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 4 == 0:
                log.info(f"epoch={epoch} step={step} loss={loss.item():.4f}")
            step += 1
            time.sleep(a.sleep)
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none", choices=["none", "pickle", "slow"])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--port", type=int, default=43020)
    a = p.parse_args()
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)
