"""Shared helpers for the multi-node scenario scripts (tiny text classifier, node-local data)."""
import argparse, json, logging, os, socket, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader, DistributedSampler

NODE = os.environ.get("NODE_NAME", socket.gethostname())
NODE_ROOT = os.environ.get("NODE_ROOT", "/work/rr110/gb/nodes/" + NODE)


def base_parser():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=10)
    p.add_argument("--logfmt", choices=["print", "logging", "tqdm"], default="print")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--sleep", type=float, default=0.05)
    return p


class Log:
    def __init__(self, mode, rank):
        self.mode = mode
        self.rank = rank
        if mode == "logging":
            logging.basicConfig(
                level=logging.INFO,
                format=f"%(asctime)s %(levelname)s [{NODE} rank{rank}] %(name)s: %(message)s",
                stream=sys.stdout)
        self.logger = logging.getLogger("train")

    def info(self, msg):
        if self.mode == "logging":
            self.logger.info(msg)
        else:
            print(f"[rank{self.rank}] {msg}", flush=True)

    def warning(self, msg):
        if self.mode == "logging":
            self.logger.warning(msg)
        else:
            print(f"[rank{self.rank}] WARNING: {msg}", flush=True)


def setup(args):
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.manual_seed(1234)
    log = Log(args.logfmt, rank)
    log.info(f"host={NODE} pid={os.getpid()} rank={rank}/{world} local_rank={local_rank} "
             f"group_rank={os.environ.get('GROUP_RANK')} master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
    return rank, world, local_rank, log


class TinyClassifier(nn.Module):
    def __init__(self, vocab=512, hidden=64, classes=8, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        blocks = []
        for _ in range(layers):
            blocks += [nn.Linear(hidden, hidden), nn.GELU()]
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids):
        h = self.embed(ids).mean(dim=1)
        return self.head(self.body(h))


class JsonlShard(Dataset):
    """Reads node-local jsonl shards: one {"ids": [...], "label": k} per line."""
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.lines = f.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        return torch.tensor(rec["ids"], dtype=torch.long), torch.tensor(rec["label"])


def make_shards(root, n_shards=4, n=200, seqlen=16, vocab=512, seed=0):
    import random
    rnd = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    for s in range(n_shards):
        with open(os.path.join(root, f"shard-{s:05d}.jsonl"), "w") as f:
            for _ in range(n):
                ids = [rnd.randrange(vocab) for _ in range(seqlen)]
                f.write(json.dumps({"ids": ids, "label": sum(ids) % 8}) + "\n")


def allreduce_mean(x, world):
    t = torch.tensor([float(x)])
    dist.all_reduce(t)
    return t.item() / world


def iterate(args, loader, log, rank):
    """Yields (step, batch) for args.steps steps, with optional tqdm on rank 0."""
    bar = None
    if args.logfmt == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100)
    step = 0
    epoch = 0
    while step < args.steps:
        if hasattr(loader, "sampler") and hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        for batch in loader:
            yield step, batch, bar
            step += 1
            if bar is not None:
                bar.update(1)
            if step >= args.steps:
                break
        epoch += 1
    if bar is not None:
        bar.close()
