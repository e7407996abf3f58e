"""Small recommender / sequence models trained with torch.multiprocessing.spawn + DDP (gloo, CPU).

--fault picks a numerical bug that only one rank's data (or every rank) trips over:
  multinomial   hard-negative sampling from softmax(user @ items.T); a NaN feature on one rank
  fp16_maskfill model cast to .half(); padding mask filled with -1e9 (only batches that contain padding)
  scaler_fp16   model cast to .half() and trained with GradScaler
  time_overflow int32 seconds -> milliseconds overflow feeding a time-delta bias table
  cholesky      batch whitening with a Cholesky factor of the batch covariance; one rank's short tail batch
  scale_underflow Gaussian head with std = exp(log_std); log_std runs off on one rank's outliers
"""
import argparse, math, os, sys, time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none",
                   choices=["none", "multinomial", "fp16_maskfill", "scaler_fp16", "time_overflow",
                            "cholesky", "scale_underflow", "cdist_half", "whiten_half"])
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--port", type=int, default=37720)
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--timeout", type=int, default=20)
    return p.parse_args()


NU, NI, D = 500, 300, 16


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Sequential(nn.Linear(8, D), nn.ReLU(), nn.Linear(D, D))
        self.items = nn.Embedding(NI, D)

    def forward(self, ufeat, pos):
        u = self.user(ufeat)
        return u, self.items(pos), self.items.weight


class TinyAttn(nn.Module):
    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, vocab)
        self.d = d

    def forward(self, ids, pad_mask):
        h = self.emb(ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        if pad_mask.any():                       # skip the mask op when the batch has no padding
            s = s.masked_fill(pad_mask[:, None, :], -1e9)
        return self.out(s.softmax(-1) @ v)


class SessionModel(nn.Module):
    """next-item model with a learned bias per minute of time gap (512 buckets)."""
    def __init__(self):
        super().__init__()
        self.items = nn.Embedding(NI, D)
        self.gap_bias = nn.Parameter(torch.zeros(512, D))
        self.head = nn.Linear(D, NI)

    def forward(self, item_seq, t_sec):
        t_ms = t_sec * 1000                               # int32 tensor, like the parquet column
        t_min = t_ms // 60_000                            # event time in whole minutes
        gap_min = t_min[:, 1:] - t_min[:, :-1]            # minutes between consecutive events
        gap_min = gap_min.clamp(max=511)
        h = self.items(item_seq[:, 1:]) + self.gap_bias[gap_min]
        return self.head(h.mean(1))


class Whitened(nn.Module):
    def __init__(self, d=12, c=4):
        super().__init__()
        self.enc = nn.Linear(20, d)
        self.cls = nn.Linear(d, c)

    def forward(self, x):
        z = self.enc(x)
        zc = z - z.mean(0, keepdim=True)
        cov = zc.T @ zc / (z.shape[0] - 1)
        L = torch.linalg.cholesky(cov)
        zw = torch.linalg.solve_triangular(L, zc.T, upper=False).T
        return self.cls(zw)


class GaussPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 32), nn.Tanh())
        self.mu = nn.Linear(32, 2)
        self.log_std = nn.Linear(6, 2)          # state-dependent log-std, unbounded

    def forward(self, s):
        return self.mu(self.body(s)), self.log_std(s)


def worker(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size,
                            timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    f = args.fault
    if f in ("multinomial", "none"):
        model = TwoTower()
    elif f == "cdist_half":
        model = TwoTower().half()                     # "halve the memory footprint"
    elif f in ("fp16_maskfill", "scaler_fp16"):
        model = TinyAttn().half()                     # "halve the memory footprint"
    elif f == "time_overflow":
        model = SessionModel()
    elif f == "cholesky":
        model = Whitened()
    elif f == "whiten_half":
        model = Whitened().half()                     # "halve the memory footprint"
    else:
        model = GaussPolicy()
    model = DDP(model)
    if f in ("fp16_maskfill", "scaler_fp16", "cdist_half", "whiten_half"):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler("cpu") if f == "scaler_fp16" else None
    if rank == 0:
        print(f"spawned {args.world_size} workers, model={type(model.module).__name__}, "
              f"params={sum(p.numel() for p in model.parameters())}", flush=True)

    g = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        bad = rank == args.bad_rank and step == args.bad_step
        if f in ("multinomial", "none"):
            ufeat = torch.randn(32, 8, generator=g)
            if bad:
                ufeat[7, 3] = float("nan")           # missing value in a raw feature column
            pos = torch.randint(0, NI, (32,), generator=g)
            u, pi, items = model(ufeat, pos)
            with torch.no_grad():
                probs = torch.softmax(u @ items.T / 0.5, dim=-1)
                neg = torch.multinomial(probs, num_samples=5)           # hard negatives
            ni = model.module.items(neg)
            pos_s = (u * pi).sum(-1, keepdim=True)
            neg_s = torch.einsum("bd,bkd->bk", u, ni)
            loss = F.cross_entropy(torch.cat([pos_s, neg_s], 1), torch.zeros(32, dtype=torch.long))
        elif f == "cdist_half":
            ufeat = torch.randn(32, 8, generator=g).half()
            pos = torch.randint(0, NI, (32,), generator=g)
            u, pi, items = model(ufeat, pos)
            d2 = torch.cdist(u, items) ** 2                           # distance to every item
            loss = F.cross_entropy(-d2.float(), pos)
        elif f in ("fp16_maskfill", "scaler_fp16"):
            ids = torch.randint(0, 100, (8, 10), generator=g)
            pad = torch.zeros(8, 10, dtype=torch.bool)
            if bad:
                pad[2, 6:] = True                    # a shorter sequence in the batch
            logits = model(ids, pad)
            loss = F.cross_entropy(logits.float().reshape(-1, 100), ids.reshape(-1))
        elif f == "time_overflow":
            item_seq = torch.randint(0, NI, (16, 6), generator=g)
            # rank shards are time-ordered: the last shard reaches day 24.8 of the collection window
            lo = 2_146_000 if rank == args.bad_rank and step >= args.bad_step else (2 + step % 5) * 86400
            start = torch.randint(lo, lo + 3000, (16, 1), generator=g)
            t_sec = (start + torch.cumsum(torch.randint(30, 900, (16, 6), generator=g), 1)).to(torch.int32)
            logits = model(item_seq, t_sec)
            loss = F.cross_entropy(logits, item_seq[:, -1])
        elif f in ("cholesky", "whiten_half"):
            n = 64 if not bad else 5                 # uneven shard: 5-sample tail batch
            x = torch.randn(n, 20, generator=g)
            if f == "whiten_half":
                x = x.half()
            y = torch.randint(0, 4, (n,), generator=g)
            loss = F.cross_entropy(model(x), y)
        else:
            s = torch.randn(64, 6, generator=g)
            if bad:
                s[::9] *= 400.0                      # sensor glitch: saturated readings
            mu, log_std = model(s)
            dist_ = torch.distributions.Normal(mu, log_std.exp())
            a = dist_.sample()
            adv = torch.randn(64, generator=g)
            loss = -(dist_.log_prob(a).sum(-1) * adv).mean()
        opt.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.1)
    if rank == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    args = get_args()
    mp.spawn(worker, args=(args,), nprocs=args.world_size, join=True)
