"""DDP training over a file-backed dataset; --fault selects a data-pipeline fault.

Data: DATA_DIR/shard_XX/sample_XXXX.npy (float32 features, last value = label).
"""
import argparse, glob, json, logging, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, IterableDataset, DistributedSampler, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--data-dir", default="/work/rr137/iu/data/feat")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--ctx", default=None)
p.add_argument("--feat", type=int, default=32)
p.add_argument("--decode-ms", type=float, default=0)
p.add_argument("--val-frac", type=float, default=0.1)
p.add_argument("--prefetch", type=int, default=None)
p.add_argument("--pin", action="store_true")
p.add_argument("--no-final-sync", action="store_true")
args = p.parse_args()

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.use_logging:
        log.info(msg)
    else:
        print(msg, flush=True)


class NpyDataset(Dataset):
    def __init__(self, files, rank, fault, fault_rank, seq=False):
        self.files = files
        self.rank = rank
        self.fault = fault
        self.fault_rank = fault_rank
        self.label_map = {i: i for i in range(4)}

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        path = self.files[idx]
        arr = np.load(path)
        if args.decode_ms:
            time.sleep(args.decode_ms / 1000.0)
        x = torch.from_numpy(arr[:-1].astype(np.float32))
        y = int(arr[-1])
        if self.fault == "label-bug":
            # labels are remapped through a dict built from the first shard only
            y = self.label_map[y]
        return x, y


class StreamDataset(IterableDataset):
    """Streams the files of this rank's shard list."""
    def __init__(self, files):
        self.files = files

    def __iter__(self):
        for path in self.files:
            arr = np.load(path)
            yield torch.from_numpy(arr[:-1].astype(np.float32)), int(arr[-1])


def keep_samples(batch):
    # variable-length friendly collate: keep the per-sample tensors, stack later in the main process
    return [x for x, _ in batch], torch.tensor([y for _, y in batch])


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.l1 = nn.Linear(d, 64)
        self.l2 = nn.Linear(64, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def main():
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(0)

    pattern = os.path.join(args.data_dir, "shard_*", "*.npy")
    if args.fault in ("shard-glob", "stream-shard"):
        # each rank reads its own shard directory
        pattern = os.path.join(args.data_dir, f"shard_{rank:02d}", "*.npy")
    files = sorted(glob.glob(pattern))
    say(f"[rank {rank}] found {len(files)} files under {args.data_dir}")

    model = Net(args.feat)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)

    collate = None
    if args.fault == "list-collate":
        collate = keep_samples
    if args.fault == "lambda-collate":
        collate = lambda batch: torch.utils.data.default_collate(batch)

    if args.fault == "uneven-split":
        # manual sharding: every world-th file, no padding
        mine = files[rank::world]
        ds = NpyDataset(mine, rank, args.fault, args.fault_rank)
        sampler = None
        shuffle = False
    elif args.fault == "holdout":
        full = NpyDataset(files, rank, args.fault, args.fault_rank)
        n_val = int(args.val_frac * len(full))
        n_train = int((1 - args.val_frac) * len(full))
        say(f"[rank {rank}] split {len(full)} samples -> train {n_train} / val {n_val}")
        ds, val_ds = torch.utils.data.random_split(full, [n_train, n_val], generator=torch.Generator().manual_seed(0))
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
        shuffle = sampler is None
    elif args.fault == "stream-shard":
        ds = StreamDataset(files)
        sampler, shuffle = None, False
    elif args.fault == "stream":
        per = files[rank::world]
        ds = StreamDataset(per)
        sampler, shuffle = None, False
    else:
        ds = NpyDataset(files, rank, args.fault, args.fault_rank)
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if args.fault != "shard-glob" else None
        shuffle = sampler is None

    kw = {}
    if args.ctx:
        kw["multiprocessing_context"] = args.ctx
    if args.prefetch is not None:
        kw["prefetch_factor"] = args.prefetch
    if args.pin:
        kw["pin_memory"] = True
    if args.dl_timeout:
        kw["timeout"] = args.dl_timeout
    if args.fault == "local-dataset":
        class LocalView(Dataset):
            def __init__(self, base):
                self.base = base
            def __len__(self):
                return len(self.base)
            def __getitem__(self, i):
                return self.base[i]
        ds = LocalView(ds)
    loader = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=shuffle,
                        num_workers=args.workers, collate_fn=collate,
                        persistent_workers=False, **kw)
    lossf = nn.CrossEntropyLoss()
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        it = loader
        if args.progress and rank == 0:
            from tqdm import tqdm
            it = tqdm(loader, desc=f"epoch {epoch}", file=sys.stdout, mininterval=0, ncols=90)
        running = 0.0
        n = 0
        for x, y in it:
            if isinstance(x, list):
                x = torch.stack(x)
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            running += loss.item()
            n += 1
            if step % 5 == 0 and not (args.progress and rank == 0):
                say(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.4f}")
            if args.steps and step >= args.steps:
                break
        sched.step()
        say(f"[rank {rank}] epoch {epoch} done: {n} batches, mean loss {running / max(n, 1):.4f}")
    if not distributed:
        say(f"final mean loss {running / max(n, 1):.4f} ({time.time() - t0:.1f}s)")
        return
    if not args.no_final_sync:
        # end-of-training metric sync
        t = torch.tensor([running / max(n, 1)])
        dist.all_reduce(t)
        if rank == 0:
            say(f"[rank 0] final mean loss across ranks {t.item() / world:.4f} ({time.time() - t0:.1f}s)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
