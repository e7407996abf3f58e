"""Token-sequence classifier fed by a file-backed Dataset + DataLoader; --fault selects a data-pipeline problem."""
import argparse, os, sys, time, json, random, glob
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="/work/rr52/a/tmp/data")
p.add_argument("--pattern", default="*.npy")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--pidfile", default="")
p.add_argument("--ctx", default=None)
args = p.parse_args()

SEQ = 24
def make_data(root, n=96, fault="none"):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        L = SEQ if fault not in ("collate", "crop") else int(rng.integers(8, 40))
        np.save(f"{root}/sample_{i:04d}.npy", rng.integers(0, 100, size=L).astype(np.int64))
    if fault in ("corrupt", "skipbad"):
        f = f"{root}/sample_0037.npy"
        data = open(f, "rb").read(); open(f, "wb").write(data[:100])   # partial copy from an interrupted rsync

class NpyDataset(Dataset):
    def __init__(self, root, pattern):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.handles = []
        self.log_fh = open(os.path.join(root, "..", "access.log"), "a") if args.fault == "pickle" else None
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if args.fault == "fds":
            fh = open(self.files[i], "rb"); self.handles.append(fh)   # bug: handles cached "for speed", never closed
            arr = np.load(fh)
        elif args.fault == "skipbad":
            try:
                arr = np.load(self.files[i])
            except (ValueError, EOFError, OSError):
                import logging
                logging.getLogger("data").exception("failed to decode %s, substituting sample %d", self.files[i], (i + 1) % len(self))
                arr = np.load(self.files[(i + 1) % len(self)])
        else:
            arr = np.load(self.files[i])
        if args.fault == "slow" and i % 50 == 17:
            time.sleep(30)    # sample lives on a slow network mount
        if args.fault == "crop":
            start = random.randrange(0, len(arr) - 16 + 1 if len(arr) >= 16 else len(arr) - 16)
            arr = arr[start:start + 16]
        x = torch.from_numpy(arr)
        y = int(arr.sum() % 3)
        return x, y

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32); self.fc = nn.Linear(32, 3)
    def forward(self, x):
        return self.fc(self.emb(x).mean(1))

def main():
    import logging
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s pid=%(process)d: %(message)s")
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank() if distributed else 0
    if rank == 0 and args.fault != "empty":
        make_data(args.data, fault=args.fault)
    if distributed:
        dist.barrier()
    ds = NpyDataset(args.data, args.pattern)
    sampler = DistributedSampler(ds, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=args.bs, shuffle=(sampler is None), sampler=sampler, num_workers=args.workers,
                    timeout=args.dl_timeout, multiprocessing_context=args.ctx, persistent_workers=False)
    model = Model()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for ep in range(args.epochs):
        if sampler is not None: sampler.set_epoch(ep)
        it = iter(dl)
        if args.pidfile and dl.num_workers > 0:
            open(f"{args.pidfile}.{rank}", "w").write(" ".join(str(w.pid) for w in it._workers))
        bar = tqdm(it, total=len(dl), desc=f"[rank{rank}] epoch {ep}", disable=(rank != 0 and args.fault != "fds"), dynamic_ncols=False, ncols=90)
        for x, y in bar:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if args.fault in ("killworker",):
                time.sleep(0.3)
        if rank == 0:
            print(f"epoch {ep} done, last loss {loss.item():.4f}", flush=True)
    if distributed:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
