"""Host address-space limit (ulimit -v): attention buffer on a long-sequence bucket, numpy mixup buffer in a worker."""
import os, sys, time, logging, resource
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader
from common import base_args

class Attn(nn.Module):
    def __init__(self, vocab=128, d=32, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.qkv = nn.Linear(d, 3 * d); self.heads = heads; self.out = nn.Linear(d, 4)
    def forward(self, x):
        h = self.emb(x); B, T, D = h.shape
        q, k, v = self.qkv(h).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / (D // self.heads) ** 0.5    # explicit B*H*T*T scores
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        return self.out(o.mean(1))

class BucketDS(Dataset):
    """Length-bucketed batches; the bucket for 'long' docs is only assigned to the last rank."""
    def __init__(self, rank, world, long_len, long_at, fault_rank):
        self.rank, self.long_len, self.long_at, self.fault_rank = rank, long_len, long_at, fault_rank
    def __len__(self): return 64
    def __getitem__(self, i):
        T = self.long_len if (i == self.long_at and self.rank == self.fault_rank) else 128
        g = torch.Generator().manual_seed(i * 7 + self.rank)
        return torch.randint(0, 128, (4, T), generator=g), torch.randint(0, 4, (4,), generator=g)

class MixupDS(Dataset):
    def __init__(self, n, feat, pool): self.n, self.feat, self.pool = n, feat, pool
    def __len__(self): return self.n
    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        # builds a mixing pool of `pool` random partners per sample (float64 by default)
        partners = rng.standard_normal((self.pool, self.feat))
        x = 0.7 * rng.standard_normal(self.feat) + 0.3 * partners.mean(0)
        return torch.from_numpy(x[:32].astype(np.float32)), i % 4

def worker(rank, world, args, port):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s", force=True)
    log = logging.getLogger("train")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=40))
    torch.set_num_threads(1)
    log.info("RLIMIT_AS soft=%s", resource.getrlimit(resource.RLIMIT_AS)[0])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Attn())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    dl = DataLoader(BucketDS(rank, world, args.long_len, args.fault_step, args.fault_rank), batch_size=None, num_workers=0)
    for step, (x, y) in enumerate(dl):
        t0 = time.time()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d seq_len %d loss %.4f (%.2fs)", step, x.shape[1], loss.item(), time.time() - t0)
        if step + 1 >= args.steps: break
    dist.barrier(); dist.destroy_process_group()
    log.info("done")

def single(args):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    log.info("RLIMIT_AS soft=%s workers=%d", resource.getrlimit(resource.RLIMIT_AS)[0], args.workers)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = MixupDS(256, args.feat, args.pool)
    dl = DataLoader(ds, batch_size=16, num_workers=args.workers, shuffle=True)
    for ep in range(2):
        for step, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 4 == 0: log.info("epoch %d step %d loss %.4f", ep, step, loss.item())
    log.info("done")

if __name__ == "__main__":
    p = base_args(); p.add_argument("--mode", default="spawn"); p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--long-len", type=int, default=128); p.add_argument("--port", type=int, default=37756)
    p.add_argument("--feat", type=int, default=256); p.add_argument("--pool", type=int, default=64)
    args = p.parse_args()
    if args.mode == "spawn":
        mp.spawn(worker, args=(args.nproc, args, args.port), nprocs=args.nproc, join=True)
    else:
        single(args)
