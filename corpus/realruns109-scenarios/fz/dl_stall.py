"""Text-classification toy trainer with a DataLoader; stall scenarios.

--fault:
  none          healthy
  fork-lock     a background "vocab refresher" thread holds the vocab lock most of the time; DataLoader
                workers are forked every epoch and may inherit the lock in the acquired state -> deadlock
  (combine with --dl-timeout N to let the DataLoader give up after N seconds)
  slow-io       --print-pids, used when a worker is killed from outside
"""
import argparse, os, sys, time, threading, signal, faulthandler, random
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--dump-on-term", action="store_true")
p.add_argument("--distributed", action="store_true")
p.add_argument("--item-sleep", type=float, default=0.002)
args = p.parse_args()

if args.dump_on_term:
    # ops practice: dump all thread stacks when the scheduler/timeout sends SIGTERM
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)

rank = 0
if args.distributed:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()

torch.set_num_threads(1)
WORDS = [f"w{i}" for i in range(500)]


class Vocab:
    def __init__(self):
        self.lock = threading.Lock()
        self.stoi = {w: i + 1 for i, w in enumerate(WORDS)}

    def encode(self, toks):
        with self.lock:
            return [self.stoi.get(t, 0) for t in toks]

    def refresher(self):
        # periodically rebuilds the lookup table (e.g. from a shared file); holds the lock while doing it
        while True:
            time.sleep(2.5)
            with self.lock:
                new = {w: i + 1 for i, w in enumerate(WORDS)}
                time.sleep(0.3)
                self.stoi = new


vocab = Vocab()
if args.fault == "fork-lock":
    threading.Thread(target=vocab.refresher, daemon=True, name="vocab-refresh").start()


class TextDS(Dataset):
    def __init__(self, n=512):
        rnd = random.Random(0)
        self.rows = [([rnd.choice(WORDS) for _ in range(16)], rnd.randint(0, 3)) for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        toks, y = self.rows[i]
        time.sleep(args.item_sleep)
        return torch.tensor(vocab.encode(toks)), y


ds = TextDS()
sampler = None
if args.distributed:
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(ds)
dl = DataLoader(ds, batch_size=32, shuffle=sampler is None, sampler=sampler,
                num_workers=args.workers, timeout=args.dl_timeout)
model = nn.Sequential(nn.EmbeddingBag(501, 32), nn.Linear(32, 4))
if args.distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

print(f"[rank{rank}] pid={os.getpid()} dataset={len(ds)} batches/epoch={len(dl)} workers={args.workers}", flush=True)
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    t0 = time.time()
    tot = 0.0
    for i, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
        if i % 4 == 0:
            print(f"[rank{rank}] epoch {epoch} it {i:3d}/{len(dl)} loss {loss.item():.4f}", flush=True)
    print(f"[rank{rank}] epoch {epoch} done mean_loss {tot / len(dl):.4f} time {time.time() - t0:.1f}s", flush=True)
print(f"[rank{rank}] finished", flush=True)
