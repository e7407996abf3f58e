"""Tiny DDP/single-process trainer with a file-backed dataset; --fault picks a data-pipeline bug.

Works under torchrun (env://), torch.multiprocessing.spawn (--spawn N) or plain python (world 1).
"""
import argparse
import ctypes
import glob
import json
import logging
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, IterableDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--data-dir", default="/work/rr143/jk/data/shards")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--logfmt", action="store_true", help="python logging with timestamps")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=47060)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--persist", action="store_true", help="persistent_workers=True")
args = p.parse_args()

log = logging.getLogger("train")


def setup_logging(rank):
    if args.logfmt:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format=f"[rank{rank}] %(message)s")


class ShardDataset(Dataset):
    """Samples stored as .npy token arrays listed in an index.jsonl."""

    def __init__(self, root, rank):
        self.root = root
        self.rank = rank
        self.items = []
        index = "index_v2.jsonl" if args.fault == "keyerror" else "index.jsonl"  # v2 = relabelled export
        with open(os.path.join(root, index)) as f:
            for line in f:
                self.items.append(json.loads(line))
        self.label_map = {"pos": 1, "neg": 0}
        self.open_handles = []

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        it = self.items[i]
        self.nfetch = getattr(self, "nfetch", 0) + 1
        late = self.nfetch > args.fault_step * args.bs
        path = os.path.join(self.root, it["file"])
        if args.fault == "fdleak":
            # memory-mapped reader that keeps every file handle open (cached for "speed")
            fh = open(path, "rb")
            self.open_handles.append(fh)
            arr = np.load(fh)
        elif args.fault == "none_sample":
            try:
                arr = np.load(path)
            except Exception as e:  # skip unreadable shards instead of crashing the run
                print(f"[data] skipping {it['file']}: {e}", flush=True)
                return None
        elif args.fault == "noisy":
            arr = np.load(path, mmap_mode="r")  # zero-copy
        else:
            arr = np.load(path)
        if args.fault == "segv" and self.rank == args.fault_rank and i % 7 == 3:
            # "fast path" decoder via ctypes reading a header pointer that is NULL for v2 shards
            # the pointer was cached by the index writer process and is stale here
            hdr = it.get("hdr_ptr") or 0x7F3DDEAD0000
            ctypes.string_at(hdr, 16)
        if args.fault == "fifo" and self.rank == args.fault_rank and late:
            # sidecar metadata lives on a network mount; here the read never returns
            with open(os.path.join(self.root, "meta", "sidecar.pipe")) as f:
                f.read()
        x = torch.from_numpy(arr) if args.fault == "noisy" else torch.from_numpy(arr.astype(np.int64))
        x = x.long()
        if args.fault != "ragged" and args.fault != "ragged_np":
            x = x[: args.seq]
            if x.numel() < args.seq:
                x = torch.cat([x, torch.zeros(args.seq - x.numel(), dtype=torch.int64)])
        if args.fault == "ragged_np":
            x = arr  # numpy arrays go straight to default_collate
        y = self.label_map[it["label"]]
        return x, y


class StreamDataset(IterableDataset):
    """Streams shard files; each rank takes files[rank::world]."""

    def __init__(self, root, rank, world):
        self.files = sorted(glob.glob(os.path.join(root, "stream", "*.jsonl")))
        self.rank, self.world = rank, world
        if args.fault == "stream_len":
            self.files = self.files[:2]

    def __iter__(self):
        for fn in self.files[self.rank::self.world]:
            with open(fn) as f:
                for line in f:
                    rec = json.loads(line)
                    x = torch.tensor(rec["ids"][: args.seq] + [0] * (args.seq - len(rec["ids"][: args.seq])))
                    yield x, rec["y"]


class StreamDatasetWithLen(StreamDataset):
    def __len__(self):
        return 40  # manifest "num_batches" used as a sample count


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(512, 32)
        self.fc = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.fc(self.emb(x).mean(1))


def run(rank, world):
    setup_logging(rank)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    if args.fault in ("stream_uneven", "stream_len"):
        ds = (StreamDatasetWithLen if args.fault == "stream_len" else StreamDataset)(args.data_dir, rank, world)
        sampler = None
    else:
        root = args.data_dir
        if args.fault == "missing" and rank == args.fault_rank:
            root = root.replace("/data/", "/data_local/")  # node-local staging dir never populated
        ds = ShardDataset(root, rank)
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    if args.fault == "empty":
        files = sorted(glob.glob(os.path.join(args.data_dir, "*.npz")))  # shards are .npy, not .npz
        ds.items = [it for it in ds.items if it["file"] in {os.path.basename(f) for f in files}]
        log.info("found %d shard files under %s", len(ds.items), args.data_dir)
        sampler = None
    kw = dict(batch_size=args.bs, num_workers=args.workers, timeout=args.loader_timeout)
    if args.workers > 0:
        kw["persistent_workers"] = args.persist
    dl = DataLoader(ds, sampler=sampler, shuffle=(sampler is None and not isinstance(ds, IterableDataset)), **kw)
    model = Model()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()
    log.info("world=%d workers=%d batch=%d dataset=%s", world, args.workers, args.bs, type(ds).__name__)
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", total=(len(dl) if (not isinstance(ds, IterableDataset) or hasattr(ds, "__len__")) else None),
                      dynamic_ncols=False, ncols=100)
        for x, y in it:
            t0 = time.time()
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 2 == 0:
                lt = loss.detach().clone()
                if world > 1:
                    dist.all_reduce(lt)
                    lt /= world
                msg = f"epoch {ep} step {step} loss {lt.item():.4f} lr 3.0e-03 step_time {time.time()-t0:.3f}s"
                if args.tqdm and rank == 0:
                    it.write(msg)
                elif not args.tqdm:
                    log.info(msg)
            if step >= args.steps:
                break
            time.sleep(0.05)
        if step >= args.steps:
            break
    if world > 1:
        # evaluation: average accuracy over ranks
        acc = torch.tensor([0.5])
        dist.all_reduce(acc)
        log.info("eval acc %.3f", acc.item() / world)
        dist.destroy_process_group()
    log.info("training finished after %d steps", step)


def spawn_main(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
