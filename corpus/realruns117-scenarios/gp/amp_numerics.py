"""Mixed precision / numerics trainer (CPU autocast, GradScaler, anomaly mode, grad clipping).
--case selects the configuration; --bad-rank/--bad-step where bad data or the bad path appears."""
import argparse, os, sys, math, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup_logging, init_dist, cleanup

ap = argparse.ArgumentParser()
ap.add_argument("--case", default="healthy_scaler")
ap.add_argument("--bad-rank", type=int, default=-1)
ap.add_argument("--bad-step", type=int, default=0)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--out-style", default="print")
ap.add_argument("--bar", action="store_true")
ap.add_argument("--accum", type=int, default=1)
args = ap.parse_args()

torch.manual_seed(0)
rank, world = init_dist()
say = setup_logging(args.out_style)
def bad(step):
    return args.bad_rank in (-1, rank) and step >= args.bad_step


class TinyAttn(nn.Module):
    def __init__(self, vocab=64, d=32, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.h = heads
        self.head = nn.Linear(d, vocab)
    mask_value = None
    def forward(self, ids, pad_mask):
        x = self.emb(ids)
        B, T, D = x.shape
        q, k, v = self.qkv(x).chunk(3, -1)
        q = q.view(B, T, self.h, -1).transpose(1, 2)
        k = k.view(B, T, self.h, -1).transpose(1, 2)
        v = v.view(B, T, self.h, -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D // self.h)
        fill = self.mask_value if self.mask_value is not None else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(pad_mask[:, None, None, :], fill)
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        return self.head(x + self.proj(y))


class Embedder(nn.Module):
    def __init__(self, d_in=16, d=24):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.GELU(), nn.Linear(64, d))
    def forward(self, x):
        return self.net(x)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    def forward(self, x):
        return self.net(x).squeeze(-1)


def gen(step):
    return torch.Generator().manual_seed(7919 * rank + step)

case = args.case
if case in ("fp16_mask", "healthy_scaler", "scaler_fp16_params", "unscale_twice", "bf16_cache"):
    model = TinyAttn()
elif case in ("anomaly_nan", "cdist_bf16", "healthy_anomaly"):
    model = Embedder()
else:
    model = Regressor()

if case == "fp16_mask":
    model.mask_value = -1e9       # mask constant from the original fp32 recipe
    model = model.half()          # "pure fp16" to halve memory
if case == "scaler_fp16_params":
    model = model.to(torch.float16)
if case == "cdist_bf16":
    model = model.to(torch.bfloat16)

if world > 1:
    model = DDP(model)
    say(f"[rank {rank}] model wrapped in DDP (world_size={world})")

opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=args.steps * 2)
use_scaler = case in ("healthy_scaler", "scaler_fp16_params", "unscale_twice")
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 24) if use_scaler else None
amp_dtype = {"healthy_scaler": torch.float16, "scaler_fp16_params": torch.float16,
             "unscale_twice": torch.float16, "bf16_cache": torch.bfloat16}.get(case)

if case in ("anomaly_nan", "healthy_anomaly"):
    torch.autograd.set_detect_anomaly(True)
    say("anomaly detection enabled for this debug run")

it = range(args.steps)
if args.bar and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, ncols=100, desc=f"{case}", file=sys.stderr, mininterval=0)

t0 = time.time()
for step in it:
    g = gen(step)
    if isinstance(model.module if world > 1 else model, TinyAttn):
        ids = torch.randint(1, 64, (8, 12), generator=g)
        lens = torch.randint(6, 13, (8,), generator=g)
        pad = torch.arange(12)[None, :] >= lens[:, None]
        ids = ids.masked_fill(pad, 0)
        tgt = ids.roll(-1, 1)
        if amp_dtype is not None:
            with torch.autocast("cpu", dtype=amp_dtype):
                logits = model(ids, pad)
                loss = F.cross_entropy(logits.reshape(-1, 64), tgt.reshape(-1), ignore_index=0)
        else:
            logits = model(ids, pad)
            loss = F.cross_entropy(logits.float().reshape(-1, 64), tgt.reshape(-1), ignore_index=0)
        if case == "bf16_cache" and bad(step):
            # keep a running buffer of the last-position logits for a distillation term
            if step == args.bad_step:
                bank = torch.zeros(64, 64)
            bank[ids[:, -1]] = logits[:, -1].detach()
            loss = loss + 0.1 * F.mse_loss(logits[:, -1].float(), bank[ids[:, -1]])
        loss = loss / args.accum
        if scaler is not None:
            scaler.scale(loss).backward()
            if (step + 1) % args.accum == 0:
                scaler.unscale_(opt)
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if case == "unscale_twice" and bad(step):
                    # second clipping pass for the embedding only, added in a refactor
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_((model.module if world > 1 else model).emb.parameters(), 0.5)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad(set_to_none=True)
        else:
            loss.backward()
            opt.step(); opt.zero_grad()
        sched.step()
    elif case in ("anomaly_nan", "cdist_bf16", "healthy_anomaly"):
        # triplet-style metric learning with Euclidean distances
        x = torch.randn(16, 16, generator=g)
        if bad(step) and case == "anomaly_nan":
            x[9] = x[3]   # duplicate sample in the batch (dataset has repeated rows)
        if case == "cdist_bf16":
            x = x.to(torch.bfloat16)
        z = model(x)
        if case == "cdist_bf16":
            d = torch.cdist(z, z)
        else:
            diff = z[:, None, :] - z[None, :, :]
            d = torch.sqrt((diff ** 2).sum(-1) + torch.eye(16))  # keep the diagonal away from sqrt(0)
        labels = torch.arange(16) // 4
        same = labels[:, None] == labels[None, :]
        pos = (d * same).sum(1) / 3
        neg = (F.relu(1.0 - d) * (~same)).sum(1) / 12
        loss = (pos + neg).float().mean()
        opt.zero_grad()
        loss.backward()
        opt.step(); sched.step()
    else:
        x = torch.randn(32, 8, generator=g)
        y = x[:, :3].sum(1) + 0.1 * torch.randn(32, generator=g)
        if case == "clip_nonfinite" and bad(step):
            # a record with an un-normalised sensor reading
            x[5, 2] = 3.0e19
        pred = model(x)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, error_if_nonfinite=True)
        opt.step(); sched.step()
    if step % 5 == 0 or step == args.steps - 1:
        extra = f" | scale {scaler.get_scale():.1f}" if scaler is not None else ""
        msg = f"step {step:3d} loss={loss.item():.4f} lr={sched.get_last_lr()[0]:.2e}{extra}"
        if args.bar and rank == 0:
            it.write(msg)
        elif rank == 0 or args.out_style == "logging":
            say(msg)

say(f"[rank {rank}] done: {args.steps} steps in {time.time()-t0:.1f}s")
cleanup()
