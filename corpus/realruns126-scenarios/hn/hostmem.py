"""Host-memory scenarios: a tiny DDP regression/classifier training loop on gloo.
--fault none|leak|numpy|pycache|worker ; --fault-rank R ; --as-headroom-mb M applies an
address-space limit (RLIMIT_AS = current VmSize + M) to rank R only, like `prlimit --as` on one rank."""
import argparse, os, sys, time, logging, resource
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--as-headroom-mb", type=int, default=0)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--hidden", type=int, default=1024)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
args = p.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.use_logging:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

def vmsize_mb():
    for l in open("/proc/self/status"):
        if l.startswith("VmSize:"):
            return int(l.split()[1]) // 1024

class Feats(Dataset):
    def __init__(self, n, d):
        self.n, self.d = n, d
        self.cache = {}
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.d, generator=g)
        if args.fault == "pycache" and rank == args.fault_rank:
            # "speed-up": memoise decoded samples as python lists (never evicted)
            self.cache[(i, len(self.cache))] = [float(v) for v in x.tolist()] * 8
        if args.fault == "worker":
            # per-sample augmentation table built inside the worker
            x = x + torch.from_numpy(np.random.rand(64, self.d).astype("float32")).mean(0) * 0.01
        return x, int(x[:4].sum() > 0)

model = nn.Sequential(nn.Linear(256, args.hidden), nn.GELU(), nn.Linear(args.hidden, args.hidden), nn.GELU(), nn.Linear(args.hidden, 2))
if world > 1:
    model = DDP(model)
ds = Feats(args.batch * args.steps * world, 256)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                persistent_workers=False)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
lossf = nn.CrossEntropyLoss()

if args.as_headroom_mb and rank == args.fault_rank:
    lim = (vmsize_mb() + args.as_headroom_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

log(f"world={world} params={sum(p.numel() for p in model.parameters())} batches/epoch={len(dl)} VmSize={vmsize_mb()}MB")
seen_losses, feature_bank = [], []
step = 0
it = None
for ep in range(args.epochs):
    if sampler: sampler.set_epoch(ep)
    batches = dl
    if args.progress and rank == 0:
        from tqdm import tqdm
        batches = tqdm(dl, desc=f"epoch {ep}", mininterval=0.5)
    t0 = time.time()
    for x, y in batches:
        out = model(x)
        loss = lossf(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        step += 1
        if args.fault == "leak":
            # running loss kept as a tensor (graph attached) + embeddings kept "for the t-SNE at epoch end"
            seen_losses.append(loss)
            feature_bank.append(model.module[1](model.module[0](x)) if world > 1 else model[1](model[0](x)))
        if args.fault == "numpy" and rank == args.fault_rank:
            # gather every prediction into one growing float64 array (re-allocated each step)
            prev = feature_bank[0] if feature_bank else np.zeros((0, 2 * args.hidden * 8))
            feature_bank[:] = [np.concatenate([prev, np.repeat(out.detach().numpy().astype(np.float64), args.hidden * 8, axis=1)])]
        if step % 5 == 0:
            msg = f"epoch {ep} step {step} loss {loss.item():.4f} lr 3.0e-04 {(time.time()-t0)/step:.3f}s/it VmSize={vmsize_mb()}MB"
            if not args.progress or rank != 0: log(msg)
        if step >= args.steps: break
if world > 1:
    dist.barrier()
log(f"training done after {step} steps")
if world > 1:
    dist.destroy_process_group()
