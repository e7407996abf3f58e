"""Loader construction bugs: unpicklable transforms under spawn, sampler+shuffle."""
import argparse, logging, os, sys, time
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--start-method", default=None)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(asctime)s %(levelname)-7s %(name)s:%(lineno)d rank=" + str(rank) + " %(message)s")
log = logging.getLogger("data")


class FeatureDataset(Dataset):
    def __init__(self, n, transform):
        rng = np.random.default_rng(1)
        self.x = rng.normal(size=(n, 16)).astype(np.float32)
        self.y = (self.x.sum(1) > 0).astype(np.int64)
        self.transform = transform

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.transform(torch.from_numpy(self.x[i])), int(self.y[i])


def build_dataset(n):
    mean, std = 0.0, 1.0
    return FeatureDataset(n, transform=lambda t: (t - mean) / std)


def main():
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    ds = build_dataset(512)
    log.info("dataset ready: %d samples", len(ds))
    if world > 1:
        sampler = DistributedSampler(ds, shuffle=True)
        dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=True, num_workers=args.workers)
    else:
        dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers,
                        multiprocessing_context=args.start_method, persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for epoch in range(3):
        log.info("epoch %d start", epoch)
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 5 == 0:
                log.info("step %d loss %.4f", step, loss.item())
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    log.info("done")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
