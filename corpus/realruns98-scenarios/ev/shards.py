"""Token-shard streaming LM job: IterableDataset over jsonl shards split across ranks.

--mode ok|uneven|missing|emptyglob|sampler
"""
import argparse, datetime, glob, json, logging, math, os, sys, time
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset, Dataset, get_worker_info
from torch.utils.data.distributed import DistributedSampler

ROOT = "/work/rr98/ev/data/shards"
log = logging.getLogger("lm")
VOCAB, SEQ = 97, 16


def build_shards(n_files=4, per_file=64):
    os.makedirs(ROOT, exist_ok=True)
    g = torch.Generator().manual_seed(1)
    for k in range(n_files):
        p = f"{ROOT}/train-{k:03d}-of-{n_files:03d}.jsonl"
        if not os.path.exists(p):
            with open(p, "w") as f:
                for _ in range(per_file):
                    f.write(json.dumps({"ids": torch.randint(0, VOCAB, (SEQ + 1,), generator=g).tolist()}) + "\n")


class Shards(IterableDataset):
    def __init__(self, files, rank, world, shard_workers=True, reported_len=None):
        self.files, self.rank, self.world = files, rank, world
        self.shard_workers, self.reported_len = shard_workers, reported_len

    def my_files(self):
        files = self.files[self.rank::self.world]
        wi = get_worker_info()
        if wi is not None and self.shard_workers:
            files = files[wi.id::wi.num_workers]
        return files

    def __iter__(self):
        for path in self.my_files():
            with open(path) as f:
                for line in f:
                    ids = torch.tensor(json.loads(line)["ids"])
                    yield ids[:-1], ids[1:]

    def __len__(self):
        if self.reported_len is None:
            raise TypeError("no len")
        return self.reported_len


class MapShards(Dataset):
    def __init__(self, files):
        self.rows = []
        for p in files:
            with open(p) as f:
                self.rows += [json.loads(l)["ids"] for l in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        ids = torch.tensor(self.rows[i])
        return ids[:-1], ids[1:]


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="ok")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--pattern", default="train-*-of-*.jsonl")
    p.add_argument("--manifest", default=None)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--manual-sync", action="store_true")
    p.add_argument("--rows-estimate", type=int, default=64)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    if rank == 0:
        build_shards(args.files)
    if world > 1:
        dist.barrier()
    if args.manifest:
        files = [l.strip() for l in open(args.manifest) if l.strip()]
    else:
        files = sorted(glob.glob(os.path.join(ROOT, args.pattern)))
    log.info(f"rank {rank}: {len(files)} shard files found under {ROOT} ({args.pattern if not args.manifest else args.manifest})")
    model = TinyLM()
    if world > 1 and not args.manual_sync:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    if args.mode in ("emptyglob", "sampler_map"):
        ds = MapShards(files)
        dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers, drop_last=True)
    elif args.mode == "sampler":
        ds = Shards(files, rank, world, reported_len=64 * len(files) // world)
        dl = DataLoader(ds, batch_size=args.bs, sampler=DistributedSampler(ds), num_workers=args.workers)
    else:
        est = args.rows_estimate * len(files) // world
        ds = Shards(files, rank, world, shard_workers=(args.mode != "noworkershard"), reported_len=est)
        dl = DataLoader(ds, batch_size=args.bs, num_workers=args.workers)
        log.info(f"rank {rank}: streaming {len(ds.files[rank::world])} shards, ~{len(dl)} steps/epoch")
    step = 0
    for ep in range(args.epochs):
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", ncols=100, mininterval=0.5)
        for x, y in it:
            loss = nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad(); loss.backward()
            if world > 1 and args.manual_sync:
                # hand-rolled data parallel: average gradients across ranks
                for prm in model.parameters():
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
            opt.step()
            step += 1
            if step % 5 == 0:
                log.info(f"rank {rank} epoch {ep} step {step} loss {loss.item():.4f} ppl {math.exp(loss.item()):.1f}")
        # end-of-epoch token-weighted loss across ranks
        t = torch.tensor([loss.item(), 1.0])
        if world > 1:
            dist.all_reduce(t)
        log.info(f"rank {rank} epoch {ep} done after {step} steps, mean loss {t[0] / t[1]:.4f}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log.info(f"rank {rank} finished")


if __name__ == "__main__":
    main()
