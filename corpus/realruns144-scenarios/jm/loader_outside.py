"""Token-classification style training whose DataLoader workers read variable-length samples
from shard files on disk.  Worker pids are published under --rundir so an outside process can
signal a worker; limits such as ulimit -n are applied from outside.  Runs single-process or
under torchrun (DDP)."""
import argparse, os, sys, time, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", default="data/shards")
p.add_argument("--nshards", type=int, default=16)
p.add_argument("--per-shard", type=int, default=256)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--collate", choices=["pad", "list"], default="pad")
p.add_argument("--rundir", default="")
p.add_argument("--sample-sleep", type=float, default=0.0)
p.add_argument("--open-shards", action="store_true", help="keep a handle open on every shard (random access without reopening)")
p.add_argument("--fmt", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(processName)s] %(message)s")
def say(m):
    if args.fmt == "logging": logging.info(m)
    else: print((f"[rank{rank}] " if distributed else "") + m, flush=True)

def make_shards():
    os.makedirs(args.data, exist_ok=True)
    rng = np.random.default_rng(0)
    for s in range(args.nshards):
        path = f"{args.data}/shard{s:03d}.npz"
        if os.path.exists(path): continue
        lens = rng.integers(8, 48, args.per_shard)
        toks = [rng.integers(0, 1000, n) for n in lens]
        np.savez(path, **{f"s{i}": t for i, t in enumerate(toks)})

class ShardDataset(Dataset):
    def __init__(self, root):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".npz"))
        self.index = [(f, i) for f in self.files for i in range(args.per_shard)]
        self.handles = {f: open(f, "rb") for f in self.files} if args.open_shards else None
    def __len__(self): return len(self.index)
    def __getitem__(self, k):
        f, i = self.index[k]
        if args.sample_sleep: time.sleep(args.sample_sleep)
        with np.load(self.handles[f] if self.handles else f) as z:
            toks = torch.from_numpy(z[f"s{i}"].astype(np.int64))
        return toks, (toks % 7 == 0).long()

def collate(batch):
    if args.collate == "list":   # keep variable-length samples as separate tensors
        return [b[0] for b in batch], [b[1] for b in batch]
    x = nn.utils.rnn.pad_sequence([b[0] for b in batch], batch_first=True)
    y = nn.utils.rnn.pad_sequence([b[1] for b in batch], batch_first=True, padding_value=-100)
    return x, y

def worker_init(wid):
    if args.rundir:
        with open(f"{args.rundir}/rank{rank}_worker{wid}.pid", "w") as f:
            f.write(str(os.getpid()))

if __name__ == "__main__":
    torch.set_num_threads(1)
    if args.rundir: os.makedirs(args.rundir, exist_ok=True)
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    if rank == 0: make_shards()
    if distributed: dist.barrier()
    ds = ShardDataset(args.data)
    sampler = DistributedSampler(ds, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=args.batch, shuffle=sampler is None, sampler=sampler,
                    num_workers=args.workers, collate_fn=collate, worker_init_fn=worker_init,
                    timeout=args.loader_timeout, persistent_workers=args.workers > 0)
    say(f"dataset: {len(ds)} samples from {len(ds.files)} shards, {len(dl)} batches/epoch, num_workers={args.workers}")
    model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 2))
    if distributed: model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    step = 0
    for epoch in range(args.epochs):
        if sampler: sampler.set_epoch(epoch)
        it = dl
        if args.fmt == "tqdm" and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {epoch}", ncols=100, mininterval=0.5)
        for x, y in it:
            if args.collate == "list":
                x = nn.utils.rnn.pad_sequence(x, batch_first=True)
                y = nn.utils.rnn.pad_sequence(y, batch_first=True, padding_value=-100)
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, 2), y.reshape(-1), ignore_index=-100)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if args.rundir:
                with open(f"{args.rundir}/rank{rank}.step", "w") as f: f.write(str(step))
            if step % 10 == 0 and args.fmt != "tqdm":
                say(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            elif args.fmt == "tqdm" and rank == 0 and step % 5 == 0:
                it.set_postfix(loss=f"{loss.item():.3f}")
        say(f"epoch {epoch} done, last loss {loss.item():.4f}")
    if distributed:
        dist.barrier(); dist.destroy_process_group()
    say("finished")
