"""DataLoader-worker scenarios: a tiny DDP (or single-process) regression run whose
dataset misbehaves in its worker processes depending on --fault."""
import argparse, os, sys, time, signal, ctypes, logging, warnings, traceback
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--feat", type=int, default=32)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--sharing", default="")
p.add_argument("--data-dir", default="")
p.add_argument("--logfmt", "--log", dest="log", default="print")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--print-every", type=int, default=1)
args = p.parse_args()

if args.log == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if args.log == "logging": log.info(msg)
    else: print(msg, flush=True)

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
if args.sharing:
    torch.multiprocessing.set_sharing_strategy(args.sharing)

class Shards(Dataset):
    """Samples are stored as raw float32 records; one record per index."""
    def __init__(self, n, feat, rank):
        self.n, self.feat, self.rank = n, feat, rank
        self.rec_bytes = feat * 4
        if args.data_dir:
            self.files = sorted(os.path.join(args.data_dir, f) for f in os.listdir(args.data_dir))
    def __len__(self): return self.n
    def load(self, idx):
        if args.data_dir:
            f = self.files[idx % len(self.files)]
            with open(f, "rb") as fh:
                raw = fh.read()
            return np.frombuffer(raw, dtype=np.float32).reshape(-1, self.feat)[idx % 4].copy()
        g = np.random.default_rng(idx)
        if args.fault == "skip_bad" and idx % 37 == 5:
            # a few records in this shard were written truncated; substitute zeros
            try:
                return np.frombuffer(g.bytes(self.rec_bytes - 3), dtype=np.float32).copy()
            except ValueError:
                print(f"WARNING: bad record {idx} in shard, replacing with zeros", file=sys.stderr)
                traceback.print_exc()
                return np.zeros(self.feat, np.float32)
        return g.standard_normal(self.feat).astype(np.float32)
    def retry(self, idx, depth=0):
        # "robust" loading: on a bad record fall through to the next index
        x = self.load(idx)
        if not np.isfinite(x).all() or (args.fault == "recursion" and self.bad(idx)):
            return self.retry(idx + 1, depth + 1)
        return x
    def bad(self, idx):
        return self.rank == args.fault_rank and idx >= self.bad_from
    def __getitem__(self, idx):
        wi = get_worker_info()
        step = idx // args.batch  # index order is sequential (no shuffle)
        hit = self.rank == args.fault_rank and step == args.fault_step
        if hit and args.fault == "worker_sigkill" and wi is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        if hit and args.fault == "worker_hang" and wi is not None:
            while True:
                time.sleep(1)  # waits on a lock that is never released
        if hit and args.fault == "worker_segv" and wi is not None:
            ctypes.string_at(0)  # native decoder dereferences a NULL buffer
        if hit and args.fault == "worker_abort" and wi is not None:
            ctypes.CDLL(None).abort()
        if args.fault == "recursion":
            self.bad_from = args.fault_step * args.batch
            x = self.retry(idx)
        else:
            x = self.load(idx)
        if args.fault == "big_batch":
            x = np.tile(x, 4096)[: self.feat * 4096]  # huge feature maps
        y = x[: self.feat].sum(keepdims=True)
        return torch.from_numpy(x), torch.from_numpy(y)

nsamples = (args.steps + 2) * args.batch
ds = Shards(nsamples, args.feat, rank)
feat_in = args.feat * 4096 if args.fault == "big_batch" else args.feat
model = nn.Sequential(nn.Linear(feat_in, 64), nn.ReLU(), nn.Linear(64, 1))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
dl = DataLoader(ds, batch_size=args.batch, shuffle=False, num_workers=args.workers,
                timeout=args.dl_timeout, persistent_workers=False)
say(f"[rank {rank}/{world}] pid={os.getpid()} dataset={len(ds)} workers={args.workers} steps={args.steps}")
t0 = time.time()
seen = []  # kept for the end-of-epoch input statistics
for step, (x, y) in enumerate(dl):
    if step >= args.steps: break
    if args.fault == "keep_batches":
        seen.append((x, y))
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if rank == 0 and (step % args.print_every == 0):
        say(f"step {step:3d} | loss {loss.item():.4f} | {(time.time()-t0)/(step+1):.3f}s/it")
if distributed:
    dist.barrier()
say(f"[rank {rank}] training finished")
if distributed:
    dist.destroy_process_group()
