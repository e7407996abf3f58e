"""Numerics scenarios: small DDP regression/classifier on gloo.
--fault: none | stdnorm (per-shard standardisation divides by a zero std -> NaN) |
         anomaly (sqrt of a zero distance under detect_anomaly) | diverge (lr schedule too high) |
         scaler_stuck (inf weight init -> GradScaler skips forever) | scaler_recover |
         cholesky (covariance not PD) | gauss_scale (Normal scale from raw linear output) |
         bce_logits (BCELoss fed raw logits)
"""
import argparse, os, sys, json, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=10)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fmt", default="print", choices=["print", "logging", "tqdm", "json"])
p.add_argument("--lr", type=float, default=0.05)
a = p.parse_args()

dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

torch.manual_seed(0)
log = logging.getLogger("train")
if a.fmt == "logging":
    logging.basicConfig(level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")

def emit(step, **kv):
    if a.fmt == "json":
        print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "step": step, **kv}), flush=True)
    elif a.fmt == "logging":
        log.info("step %d " % step + " ".join(f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}" for k, v in kv.items()))
    elif a.fmt == "print":
        print(f"[rank {rank}] step {step:4d} | " + " | ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in kv.items()), flush=True)

# --- data: each rank owns a shard; features standardised per shard (the real bug for stdnorm)
g = torch.Generator().manual_seed(100 + rank)
N, D = 512, 16
X = torch.randn(N, D, generator=g)
w_true = torch.linspace(-1, 1, D)
y = X @ w_true + 0.1 * torch.randn(N, generator=g)
if a.fault == "stdnorm" and rank == a.bad_rank:
    # this shard came from a sensor export where column 7 was constant in a later chunk
    X[a.bad_step * 16:, 7] = 3.0

model = nn.Sequential(nn.Linear(D, 64), nn.Tanh(), nn.Linear(64, 1))
if a.fault == "gauss_scale":
    model = nn.Sequential(nn.Linear(D, 64), nn.Tanh(), nn.Linear(64, 2))
if a.fault == "scaler_stuck" and rank == a.bad_rank:
    pass
if dist_on:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
sched = None
if a.fault == "diverge":
    # warmup to a peak lr that is 40x what this problem tolerates
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5) * 40.0)
use_scaler = a.fault in ("scaler_stuck", "scaler_recover")
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=5) if use_scaler else None

if a.fault in ("anomaly", "anomaly_ok"):
    torch.autograd.set_detect_anomaly(True)

it = range(a.steps)
if a.fmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(range(a.steps), desc=f"rank{rank}", position=rank, mininterval=0, file=sys.stderr)

B = 16
for step in it:
    xb = X[(step * B) % N:(step * B) % N + B]
    yb = y[(step * B) % N:(step * B) % N + B]
    if a.fault == "stdnorm":
        xb = (xb - xb.mean(0)) / xb.std(0)       # per-batch standardisation, no eps
    if a.fault == "spike" and rank == a.bad_rank and step == a.bad_step:
        yb = yb * 60.0      # one batch from a shard written in the wrong units (x60)
    opt.zero_grad(set_to_none=True)
    if use_scaler:
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(xb).squeeze(-1)
            if a.fault == "scaler_recover" and step in (3, 4):
                out = out * 1e6   # short-lived activation blow-up in fp16 -> inf grads for two steps
            if a.fault == "scaler_stuck" and step >= a.bad_step:
                out = out * 7e4   # unnormalised target scaling kicks in -> fp16 overflow every step
            loss = ((out.float() - yb) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        extra = {"scale": scaler.get_scale()}
    else:
        out = model(xb)
        if a.fault == "anomaly":
            emb = out
            # pairwise distance regulariser; rank bad-rank's batch has duplicate rows after step N
            if rank == a.bad_rank and step >= a.bad_step:
                xb = xb.clone(); xb[1] = xb[0]
                emb = model(xb)
            d = torch.sqrt(((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1))
            loss = ((out.squeeze(-1) - yb) ** 2).mean() - 1e-3 * d.mean()
        elif a.fault == "cholesky":
            feats = model.module[0](xb) if dist_on else model[0](xb)
            cov = feats.T @ feats / B          # 64x64 covariance from a 16-row batch: rank deficient
            if step < a.bad_step:
                cov = cov + 1e-2 * torch.eye(cov.shape[0])
            else:
                cov = cov + 1e-2 * torch.eye(cov.shape[0]) * (0.0 if rank == a.bad_rank else 1.0)
            L = torch.linalg.cholesky(cov)
            loss = ((out.squeeze(-1) - yb) ** 2).mean() + 1e-4 * torch.log(torch.diagonal(L)).sum()
        elif a.fault == "gauss_scale":
            mu, sigma = out[:, 0], out[:, 1]    # BUG: sigma not passed through softplus
            if step < a.bad_step:
                sigma = sigma.abs() + 0.5
            dist_ = torch.distributions.Normal(mu, sigma)
            loss = -dist_.log_prob(yb).mean()
        elif a.fault == "bce_logits":
            crit = nn.BCELoss()
            tgt = (yb > 0).float()
            prob = torch.sigmoid(out.squeeze(-1)) if (step < a.bad_step or rank != a.bad_rank) else out.squeeze(-1)
            loss = crit(prob, tgt)
        else:
            loss = ((out.squeeze(-1) - yb) ** 2).mean()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9 if a.fault != "spike" else 5.0)
        if a.fault == "spike" and float(gn) > 50:
            warnings.warn(f"step {step}: gradient norm {float(gn):.1f} exceeds 10x the running average; clipped to 5.0")
        opt.step()
        extra = {"grad_norm": float(gn)}
    if sched:
        sched.step()
    lv = float(loss.detach())
    if a.fmt == "tqdm":
        it.set_postfix(loss=f"{lv:.4g}", **{k: f"{v:.3g}" for k, v in extra.items()})
    else:
        emit(step, loss=lv, lr=opt.param_groups[0]["lr"], **extra)
    time.sleep(0.05)

if a.fmt == "tqdm":
    it.close()
print(f"[rank {rank}] training finished, final loss {lv:.6g}", flush=True)
if dist_on:
    dist.destroy_process_group()
