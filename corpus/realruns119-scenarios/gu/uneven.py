"""DDP with uneven number of batches per rank, optional Join, optional SyncBatchNorm."""
import argparse, logging, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.algorithms.join import Join
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--use-join", action="store_true")
p.add_argument("--syncbn", action="store_true")
p.add_argument("--samples", default="640,512")   # per-rank shard sizes (comma list)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--pg-timeout", type=int, default=25)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--drop-last", type=int, default=1)
p.add_argument("--tqdm-bar", action="store_true")
a = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
log = logging.getLogger(f"train.rank{rank}")
torch.manual_seed(0)
n = int(a.samples.split(",")[rank])
g = torch.Generator().manual_seed(rank)
ds = TensorDataset(torch.randn(n, 3, 8, 8, generator=g), torch.randint(0, 5, (n,), generator=g))
dl = DataLoader(ds, batch_size=a.bs, shuffle=True, drop_last=bool(a.drop_last))
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
if a.syncbn:
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
log.info("shard has %d samples -> %d batches (bs=%d, drop_last=%s)", n, len(dl), a.bs, bool(a.drop_last))
it = dl
if a.tqdm_bar:
    from tqdm import tqdm
    it = tqdm(dl, desc=f"rank{rank}", mininterval=0, ascii=True)
for ep in range(a.epochs):
    ctx = Join([model]) if a.use_join else torch.enable_grad()
    with ctx:
        for i, (x, y) in enumerate(it):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if i % 4 == 0:
                log.info("epoch %d batch %d/%d loss %.4f", ep, i, len(dl), loss.item())
    # average the epoch metric across ranks
    m = torch.tensor([loss.item()])
    dist.all_reduce(m)
    log.info("epoch %d done, mean last loss %.4f", ep, m.item() / world)
dist.destroy_process_group()
log.info("finished")
