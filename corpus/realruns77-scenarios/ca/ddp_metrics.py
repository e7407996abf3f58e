"""torchrun script family: DDP training with per-step metric all_reduce; launched from notebook `!` cells.
--fault {none,bincount,uneven}  --rank R (rank whose shard is short for 'uneven')"""
import argparse, os, time, datetime, logging
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="none"); ap.add_argument("--rank", type=int, default=1)
ap.add_argument("--steps", type=int, default=60); ap.add_argument("--timeout", type=int, default=20)
args = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("ddp_metrics")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 6))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
# each rank reads its own shard file list; shard sizes come from the file listing
n_samples = 64 * args.steps
if args.fault == "uneven" and rank == args.rank:
    n_samples = 64 * (args.steps // 2)           # this rank's shard has half the files
g = torch.Generator().manual_seed(rank)
X = torch.randn(n_samples, 12, generator=g); Y = (X[:, :6].argmax(-1))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=64)
log.info("rank %d/%d: %d batches", rank, world, len(loader))
for step, (x, y) in enumerate(loader):
    logits = ddp(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad(); loss.backward(); opt.step()
    preds = logits.argmax(-1)
    if args.fault == "bincount":
        hist = torch.bincount(preds)                       # class histogram of predictions
    else:
        hist = torch.bincount(preds, minlength=6)
    dist.all_reduce(hist)
    acc = (preds == y).float().mean(); dist.all_reduce(acc); acc /= world
    if rank == 0 and step % 10 == 0:
        log.info("step %d loss %.4f acc %.3f hist %s", step, loss.item(), acc.item(), hist.tolist())
log.info("rank %d finished its shard, running local eval", rank)
with torch.no_grad():
    Xe = torch.randn(20000, 12, generator=g)
    for _ in range(40):
        ev = (model(Xe).argmax(-1) == Xe[:, :6].argmax(-1)).float().mean()
        time.sleep(1.0)
log.info("rank %d eval acc %.3f", rank, ev.item())
dist.barrier()
dist.destroy_process_group()
