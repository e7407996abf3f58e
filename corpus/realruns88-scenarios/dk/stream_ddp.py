"""Streaming (IterableDataset) / map-style text-corpus training under DDP.

Launch with torchrun (RANK set) or `python stream_ddp.py --spawn N` (torch.multiprocessing.spawn).
Corpus: DATA/part-XXXXX.txt, one sample per line: space separated token ids.
"""
import argparse, datetime, glob, logging, math, os, sys, time, warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr88/dk/data/stream")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=38150)
p.add_argument("--mode", default="iter-rank",
               choices=["iter-rank", "iter-unsharded", "iter-sampler", "map"])
p.add_argument("--workers", type=int, default=-1, help="-1: derive from cpu count")
p.add_argument("--persistent", action="store_true")
p.add_argument("--replicas", type=int, default=0, help="DistributedSampler num_replicas (0: world size)")
p.add_argument("--batch", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--ddp", type=int, default=1)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--log", default="print", choices=["print", "logging"])
p.add_argument("--skip-bad", action="store_true", help="log and skip unparsable lines")
args = p.parse_args()
VOCAB, SEQ = 300, 24


def parse(line):
    toks = [int(t) for t in line.split()]
    toks = (toks + [0] * SEQ)[: SEQ + 1]
    return torch.tensor(toks)


class Stream(IterableDataset):
    def __init__(self, files, log):
        self.files, self.log = files, log

    def __iter__(self):
        wi = get_worker_info()
        files = self.files if wi is None else self.files[wi.id::wi.num_workers]
        for f in files:
            with open(f) as fh:
                for n, line in enumerate(fh):
                    try:
                        yield parse(line)
                    except ValueError:
                        if not args.skip_bad:
                            raise
                        self.log.exception("skipping bad record %s:%d", os.path.basename(f), n + 1)

    def __len__(self):
        return 400  # approximate, from the corpus manifest


class Lines(Dataset):
    def __init__(self, files):
        self.lines = [l for f in files for l in open(f)]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return parse(self.lines[i])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 48)
        self.ff = nn.Sequential(nn.Linear(48, 96), nn.GELU(), nn.Linear(96, VOCAB))

    def forward(self, x):
        return self.ff(self.emb(x))


def run(rank, world):
    if args.log == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(process)d] %(levelname)s rank{rank} %(name)s - %(message)s")
    log = logging.getLogger("stream")
    say = (lambda m: log.info(m)) if args.log == "logging" else (lambda m: print(f"rank {rank}: {m}", flush=True))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    files = sorted(glob.glob(os.path.join(args.data, "part-*.txt")))
    workers = args.workers
    if workers < 0:
        # leave one core per rank for the training loop
        workers = min(4, (os.cpu_count() or 1) // local_world - 1)
    sampler = None
    if args.mode == "iter-rank":
        ds = Stream(files[rank::world], log)
    elif args.mode == "iter-unsharded":
        ds = Stream(files, log)
    elif args.mode == "iter-sampler":
        ds = Stream(files, log)
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
    else:
        ds = Lines(files)
        sampler = DistributedSampler(ds, num_replicas=args.replicas or world, rank=rank, shuffle=True)
    say(f"{len(files)} corpus files, mode={args.mode}, num_workers={workers}, persistent={args.persistent}")
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, num_workers=workers,
                    persistent_workers=args.persistent, drop_last=False)
    if args.mode.startswith("iter"):
        say(f"~{len(dl)} batches per epoch (from dataset length)")
    torch.manual_seed(0)
    model = Model()
    if args.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for ep in range(args.epochs):
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(ep)
        tot, nb = 0.0, 0
        for b in dl:
            x, y = b[:, :-1], b[:, 1:]
            loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            if not args.ddp:
                for prm in model.parameters():
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
            opt.step()
            step += 1
            tot += loss.item()
            nb += 1
            if step % 10 == 0:
                say(f"epoch {ep} step {step} loss {loss.item():.4f}")
        stats = torch.tensor([tot, float(nb)])
        dist.all_reduce(stats)
        say(f"epoch {ep} finished: {nb} local batches, mean loss {stats[0].item() / max(stats[1].item(), 1):.4f}")
    dist.barrier()
    say("done")
    dist.destroy_process_group()


def spawn_entry(rank, world):
    run(rank, world)


if __name__ == "__main__":
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
