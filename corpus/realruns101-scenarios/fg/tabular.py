"""Tabular / text-record training: CSV, JSONL, Parquet via HF datasets or a hand-written Dataset."""
import argparse, os, json, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--files", nargs="+", required=True)
p.add_argument("--fmt", default="csv")
p.add_argument("--loader", default="hf")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--spawn", type=int, default=0, help="launch ranks with torch.multiprocessing.spawn")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", default="42560")
p.add_argument("--main-first", type=int, default=1)
args = p.parse_args()

FEATS = {"csv": ["f1", "f2"], "parquet": None, "jsonl": None}

class JsonlDS(Dataset):
    """Reads records lazily by byte offset so huge files need not fit in memory."""
    def __init__(self, path):
        self.path = path; self.offsets = []
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)
    def __len__(self): return len(self.offsets)
    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i]); rec = json.loads(f.readline())
        x = torch.tensor([len(rec["text"]) / 50.0, rec["id"] / 256.0])
        return x, rec["label"]

def build(rank, world):
    if args.loader == "hf":
        import datasets
        datasets.logging.set_verbosity_info() if os.environ.get("HF_VERBOSE") else None
        kind = {"csv": "csv", "parquet": "parquet", "jsonl": "json"}[args.fmt]
        if world > 1 and args.main_first and rank != 0:
            dist.barrier()  # wait for rank 0 to build the arrow cache
        ds = datasets.load_dataset(kind, data_files=args.files, split="train")
        if world > 1 and args.main_first and rank == 0:
            dist.barrier()
        print(f"[rank{rank}] loaded {ds}", flush=True)
        if args.fmt == "csv":
            ds = ds.map(lambda r: {"x": [r["f1"], r["f2"]]}, remove_columns=["f1", "f2"])
        else:
            ds = ds.map(lambda r: {"x": [len(r["text"]) / 50.0, r["id"] / 400.0]}, remove_columns=["text"])
        ds = ds.with_format("torch", columns=["x", "label"])
        return ds, lambda b: (torch.stack([r["x"] for r in b]).float(), torch.stack([r["label"] for r in b]))
    return JsonlDS(args.files[0]), None

def main(rank, world):
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    ds, collate = build(rank, world)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, seed=1) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, num_workers=args.workers, collate_fn=collate)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 3))
    if world > 1: model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for ep in range(args.epochs):
        if sampler: sampler.set_epoch(ep)
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 5 == 0: print(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
    print(f"[rank{rank}] finished {step} steps", flush=True)
    if world > 1: dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.nprocs,), nprocs=args.nprocs, join=True)
    else:
        main(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
