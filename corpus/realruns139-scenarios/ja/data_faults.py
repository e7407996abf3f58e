"""Data-dependent faults that hit one rank of a DDP run (tiny embedding+MLP classifier, gloo, CPU)."""
import argparse, os, sys, time, logging, json
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

VOCAB, SEQ, FEAT, NCLS = 100, 8, 16, 4

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=5)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--dl-timeout", type=float, default=0)
    p.add_argument("--data-dir", default="/work/rr139/ja/data")
    p.add_argument("--fmt", default="plain", choices=["plain", "logging"])
    p.add_argument("--progress", action="store_true")
    p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
    p.add_argument("--port", default="46780")
    p.add_argument("--pg-timeout", type=int, default=30)
    return p.parse_args()

class ShardDataset(Dataset):
    def __init__(self, n, args, world, rank_of_bad):
        self.n, self.a, self.w = n, args, world
        b = args.bad_step * args.bs * world + args.bad_rank  # first sample the bad rank sees at bad_step
        self.bad_first = b
        self.bad_batch = set(b + j * world for j in range(args.bs))
        self.files = None
        if args.fault in ("corrupt_npy", "dl_timeout"):
            self.files = os.path.join(args.data_dir, args.fault)
    def __len__(self):
        return self.n
    def _feat(self, idx):
        if self.files:
            path = os.path.join(self.files, f"sample_{idx:05d}.npy")
            return torch.from_numpy(np.load(path)).float()
        g = torch.Generator().manual_seed(idx)
        return torch.randn(FEAT, generator=g)
    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(10_000 + idx)
        ids = torch.randint(0, VOCAB, (SEQ,), generator=g)
        feat = self._feat(idx)
        label = int(ids.sum()) % NCLS
        f = self.a.fault
        if f == "emb_oob" and idx == self.bad_first:
            ids[3] = VOCAB + 37          # token from a newer tokenizer vocabulary
        if f == "shape" and idx in self.bad_batch:
            feat = feat[:12]             # shard produced with an older 12-column feature extractor
        if f == "collate" and idx == self.bad_first + self.w * 3:
            ids = torch.cat([ids, torch.randint(0, VOCAB, (3,), generator=g)])  # unpadded longer sequence
        if f == "target_dtype" and idx in self.bad_batch:
            return {"ids": ids, "feat": feat, "label": float(label)}   # labels parsed as floats from csv
        if f == "keyerror" and idx in self.bad_batch:
            return {"ids": ids, "feat": feat, "target": label}         # records from the eval split use 'target'
        if f == "worker_error" and idx == self.bad_first:
            raw = "N/A"                  # missing annotation in the manifest
            label = int(raw)
        return {"ids": ids, "feat": feat, "label": label}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.proj = nn.Linear(FEAT, 32)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, NCLS))
    def forward(self, ids, feat):
        return self.head(torch.cat([self.emb(ids).mean(1), self.proj(feat)], dim=-1))

def prepare_files(args, n, world):
    if args.fault not in ("corrupt_npy", "dl_timeout"):
        return
    d = os.path.join(args.data_dir, args.fault)
    os.makedirs(d, exist_ok=True)
    ds = ShardDataset(n, argparse.Namespace(**{**vars(args), "fault": "none"}), world, 0)
    bad = ds.bad_first + world * 2
    for i in range(n):
        p = os.path.join(d, f"sample_{i:05d}.npy")
        if os.path.exists(p):
            os.remove(p)
        np.save(p, ds._feat(i).numpy())
    p = os.path.join(d, f"sample_{bad:05d}.npy")
    if args.fault == "corrupt_npy":
        # partial copy from the object store: file cut short
        with open(p, "r+b") as fh:
            fh.truncate(100)
    else:
        os.remove(p)
        os.mkfifo(p)   # stands in for a path on a hung network mount: open() never returns

def main_worker(rank, world, args):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", args.port)
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"[rank{rank}] {m}", flush=True)
    torch.manual_seed(0)
    n = args.steps * args.bs * world
    ds = ShardDataset(n, args, world, args.bad_rank)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers, timeout=args.dl_timeout)
    model = Net()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    log(f"world_size={world} samples/rank={len(dl)*args.bs} steps={len(dl)} workers={args.workers}")
    it = dl
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc="epoch 0", dynamic_ncols=False, ncols=90)
    t0 = time.time()
    for step, batch in enumerate(it):
        logits = model(batch["ids"], batch["feat"])
        loss = F.cross_entropy(logits, batch["label"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 2 == 0:
            log(f"step {step} loss {loss.item():.4f} lr 3.0e-03 {(time.time()-t0)/(step+1):.3f}s/it")
    log("training finished")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()

if __name__ == "__main__":
    args = get_args()
    if args.spawn:
        prepare_files(args, args.steps * args.bs * args.spawn, args.spawn)
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.spawn, args), nprocs=args.spawn)
    else:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
        if rank == 0:
            prepare_files(args, args.steps * args.bs * world, world)
        if world > 1:
            time.sleep(1)
        main_worker(rank, world, args)
