"""Keyword-spotting style training from per-rank audio (WAV) files or tar shards (webdataset layout)."""
import argparse, os, sys, io, wave, tarfile, random, struct, datetime
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, IterableDataset, DataLoader, get_worker_info
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--kind", default="wav")
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-index", type=int, default=30)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--per-rank", type=int, default=64)
p.add_argument("--shards-per-rank", type=int, default=4)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--stamp", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

SR = 8000
def wav_bytes(rng, n=4000):
    x = (np.sin(np.arange(n) * rng.uniform(0.01, 0.3)) * 8000 + rng.normal(0, 500, n)).astype(np.int16)
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(SR); w.writeframes(x.tobytes())
    return b.getvalue()

def prepare():
    rng = np.random.default_rng(0)
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.nranks):
        if args.kind == "wav":
            d = os.path.join(args.prepare, f"rank{r}"); os.makedirs(d, exist_ok=True)
            for i in range(args.per_rank):
                data = wav_bytes(rng)
                if r == args.bad_rank and i == args.bad_index and args.fault == "corrupt":
                    data = b"\x00" * 4096 + data[4096:]     # header overwritten (sparse file after crash)
                with open(os.path.join(d, f"utt_{i:04d}_{i % 5}.wav"), "wb") as f: f.write(data)
        else:
            nsh = args.shards_per_rank
            if args.fault == "uneven" and r == args.bad_rank:
                nsh -= 1                                   # one shard failed to upload for this rank
            for s in range(nsh):
                fn = os.path.join(args.prepare, f"train-r{r}-{s:05d}.tar")
                with tarfile.open(fn, "w") as t:
                    for i in range(16):
                        data = wav_bytes(rng)
                        ti = tarfile.TarInfo(f"{s:05d}_{i:04d}.wav"); ti.size = len(data)
                        t.addfile(ti, io.BytesIO(data))
                        lab = str(i % 5).encode()
                        ti = tarfile.TarInfo(f"{s:05d}_{i:04d}.cls"); ti.size = len(lab)
                        t.addfile(ti, io.BytesIO(lab))
                if args.fault == "brokentar" and r == args.bad_rank and s == 1:
                    sz = os.path.getsize(fn)
                    with open(fn, "r+b") as f: f.truncate(int(sz * 0.55))   # partial copy from object store
    print("prepared", args.prepare)

def decode(raw):
    with wave.open(io.BytesIO(raw), "rb") as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
    return torch.from_numpy(x[:4000].copy())

class WavFolder(Dataset):
    def __init__(self, root, rank):
        d = os.path.join(root, f"rank{rank}")
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d))
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            x = decode(f.read())
        return x, int(self.files[i][-5])

class TarShards(IterableDataset):
    def __init__(self, root, rank):
        self.shards = sorted(os.path.join(root, f) for f in os.listdir(root) if f.startswith(f"train-r{rank}-"))
    def __iter__(self):
        wi = get_worker_info()
        shards = self.shards if wi is None else self.shards[wi.id::wi.num_workers]
        for sh in shards:
            with tarfile.open(sh, "r") as t:
                cur = {}
                for m in t:
                    key, ext = m.name.rsplit(".", 1)
                    cur[ext] = t.extractfile(m).read()
                    if "wav" in cur and "cls" in cur:
                        yield decode(cur["wav"]), int(cur["cls"])
                        cur = {}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 8, 9, stride=4); self.c2 = nn.Conv1d(8, 16, 9, stride=4); self.fc = nn.Linear(16, 5)
    def forward(self, x):
        x = F.relu(self.c1(x.unsqueeze(1))); x = F.relu(self.c2(x))
        return self.fc(x.mean(-1))

def main():
    rank, world = common.setup(args.pg_timeout)
    log = common.get_logger("kws", rank, stamp=args.stamp)
    ds = WavFolder(args.data, rank) if args.kind == "wav" else TarShards(args.data, rank)
    n = len(ds) if args.kind == "wav" else f"{len(ds.shards)} shards"
    log.info(f"rank {rank}/{world}: {n} ({args.kind}), num_workers={args.workers}")
    dl = DataLoader(ds, batch_size=args.bs, shuffle=(args.kind == "wav"), num_workers=args.workers)
    model = torch.nn.parallel.DistributedDataParallel(Net()) if world > 1 else Net()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    step = 0
    for ep in range(args.epochs):
        tot = torch.zeros(2)
        for x, y in dl:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += torch.tensor([loss.item() * len(y), len(y)])
            if step % 4 == 0:
                log.info(f"epoch {ep} step {step} loss {loss.item():.4f}")
            step += 1
        if world > 1:
            dist.all_reduce(tot)
        log.info(f"epoch {ep} done: mean train loss {tot[0] / tot[1]:.4f} over {int(tot[1])} samples")
    common.cleanup()

if __name__ == "__main__":
    if args.prepare: prepare()
    else: main()
