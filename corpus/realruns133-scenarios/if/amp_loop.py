"""Custom DDP training loop with autocast (fp16/bf16) and GradScaler on CPU/gloo.

--fault selects a real bug; --bad-rank / --bad-step select where it strikes.
"""
import argparse, logging, math, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=0)
p.add_argument("--bad-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--prec", default="fp16", choices=["fp16", "bf16", "fp32"])
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
p.add_argument("--stamp", action="store_true", help="logging with timestamps")
p.add_argument("--bar", action="store_true", help="tqdm progress bar")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.stamp:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format=f"[rank{rank}] %(message)s")
log = logging.getLogger("train")

torch.manual_seed(0)
if args.anomaly:
    torch.autograd.set_detect_anomaly(True)

DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.prec]
use_amp = args.prec != "fp32"


# ---------------- data: each rank normalises its own shard -----------------
def make_shard(rank, n=256, d=16):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(n, d)).astype(np.float32)
    if args.fault == "nan_input" and rank == args.bad_rank:
        # this shard came from a sensor that was stuck: column 7 is constant,
        # plus a block of rows exported with missing values
        x[:, 7] = 3.0
    mean, std = x.mean(0), x.std(0)
    x = (x - mean) / std  # std == 0 -> 0/0 = nan for the constant column
    if args.fault == "overflow" and rank == args.bad_rank:
        # the second export file of this shard was written in mV instead of V and skipped normalisation
        tail = args.bad_step * 32
        x[tail:] = rng.normal(size=(n - tail, d)).astype(np.float32) * 1000.0
    w = rng.normal(size=(d,)).astype(np.float32)
    y = (x @ w > 0).astype(np.int64) if args.fault != "nan_input" else (np.nan_to_num(x) @ w > 0).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


class GatedExpLayer(nn.Module):
    """custom layer: exp-gated features (overflows in fp16 if the logits grow)"""
    def __init__(self, d, gain=1.0):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.gain = gain

    def forward(self, x):
        g = self.lin(x)
        return x * torch.exp(self.gain * g) / (1 + torch.exp(self.gain * g)).sum(-1, keepdim=True)


class Net(nn.Module):
    def __init__(self, d=16, h=64, gain=1.0):
        super().__init__()
        self.gate = GatedExpLayer(d, gain)
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, 2)
        self.emb = nn.Linear(h, 8)

    def forward(self, x):
        h = F.gelu(self.fc1(self.gate(x)))
        return self.fc2(h), self.emb(h)


gain = 1.0
if args.fault == "scale_collapse":
    gain = 40.0  # sharpened gate (temperature 1/40) -> exp() overflows fp16 every step
model = Net(gain=gain)
if args.fault == "fp16_params":
    model = model.half()  # "save memory": cast the whole model to fp16 as well as using autocast
ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
if args.fault == "no_inf_checks":
    # the model is re-created after loading pretrained weights, but the optimizer
    # still points at the parameters of the first instance
    model = Net(gain=gain)
    model.load_state_dict(ddp.module.state_dict() if distributed else ddp.state_dict())
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, enabled=(args.prec == "fp16"))

if args.fault == "scaler_resume":
    # resume: checkpoint was written by the bf16 run, whose GradScaler was disabled
    ck = "/work/rr133/if/tmp/ckpt_bf16_run.pt"
    if rank == 0 and not os.path.exists(ck):
        os.makedirs(os.path.dirname(ck), exist_ok=True)
        off = torch.amp.GradScaler("cpu", enabled=False)
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "scaler": off.state_dict(), "step": 400}, ck)
    if distributed:
        dist.barrier()
    state = torch.load(ck)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optim"])
    log.info("resumed from %s at step %d", ck, state["step"])
    scaler.load_state_dict(state["scaler"])

x_all, y_all = make_shard(rank)
B = 32
log.info("world=%d precision=%s amp=%s scaler=%s init_scale=%.0f", world, args.prec, use_amp, scaler.is_enabled(), args.init_scale)

it = range(args.steps)
if args.bar and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)

min_scale = 1e-4
temperature = 0.0 if args.fault == "greedy_temp0" else 0.8
for step in it:
    i = (step * B) % (x_all.shape[0] - B)
    x, y = x_all[i:i + B], y_all[i:i + B]
    with torch.autocast("cpu", dtype=DT, enabled=use_amp):
        logits, emb = ddp(x)
        if args.fault == "mask_fill" and rank == args.bad_rank and step >= args.bad_step:
            # padding mask for the variable-length tail (copied from the fp32 code path)
            pad = torch.zeros_like(logits, dtype=torch.bool)
            pad[:, -1] = step % 2 == 0
            logits = logits.masked_fill(pad, -1e9)
        if args.fault == "log_loss" and rank == args.bad_rank and step >= args.bad_step:
            # hand-written NLL: log of softmax probabilities computed in the autocast dtype
            probs = torch.softmax(logits * 30.0, dim=-1).to(DT)
            loss = -torch.log(probs.gather(1, y[:, None])).mean()
        else:
            loss = F.cross_entropy(logits.float(), y)
        loss = loss + 1e-4 * emb.float().pow(2).mean()  # small embedding norm penalty
        if args.fault == "dist_loss":
            # pull embeddings of the same class together (euclidean distance)
            d = torch.sqrt(((emb[:, None, :] - emb[None, :, :]) ** 2).sum(-1))
            same = (y[:, None] == y[None, :]).float()
            loss = loss + 0.01 * (d * same).mean()
        if args.fault == "div_loss" and rank == args.bad_rank:
            # per-batch normalisation by the number of positives in the batch
            pos = (y == 1).float().sum()
            if step >= args.bad_step:
                pos = (y == 7).float().sum()  # label remap bug: positives are now class 7 -> none
            loss = loss + ((logits[:, 1].float() * (y == 1).float()).sum() / pos) * 0.1
    if args.fault == "proj_outside":
        # auxiliary projection computed outside autocast with the fp32 weight
        aux = emb @ ddp.module.emb.weight if distributed else emb @ ddp.emb.weight
        loss = loss + 0.0 * aux.sum()
    if args.fault == "inv_whiten":
        # ZCA whitening of the embeddings (kept in the embedding dtype to save memory)
        cov = emb.T @ emb / emb.shape[0] + 1e-3 * torch.eye(8, dtype=emb.dtype)
        W = torch.linalg.inv(cov)
        loss = loss + 1e-3 * (emb @ W).pow(2).mean()

    if args.fault in ("nan_input", "log_loss", "div_loss", "overflow") and not torch.isfinite(loss):
        # guard copied from the DETR / timm training loops
        print(f"Loss is {loss.item()}, stopping training", flush=True)
        print(f"rank {rank} step {step} batch rows {i}..{i + B}", flush=True)
        sys.exit(1)

    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    if args.fault == "unscale_twice":
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        # helper that logs grad norms "in real units" unscales again
        def log_grad_norm(scaler, opt):
            scaler.unscale_(opt)
        if step >= args.bad_step:
            log_grad_norm(scaler, opt)
    else:
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    scale_before = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    scale_after = scaler.get_scale()
    skipped = scaler.is_enabled() and scale_after < scale_before
    msg = f"step {step:4d} loss {loss.item():.4f} grad_norm {gn.item():.3f} scale {scale_after:.6g}"
    if skipped:
        msg += "  [overflow: skipped step, reducing loss scale]"
    if args.bar and rank == 0:
        it.write(msg)
    elif rank == 0 or args.fault in ("scale_collapse",):
        log.info(msg)
    if scaler.is_enabled() and scale_after < min_scale:
        # fairseq-style guard
        raise FloatingPointError(
            f"Minimum loss scale reached ({min_scale}). Your loss is probably exploding. "
            "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
    time.sleep(0.05)

# evaluation: sample predictions from the model
with torch.no_grad():
    logits, _ = ddp(x_all[:8])
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    pred = torch.multinomial(probs, 1)
    log.info("sampled predictions %s", pred.flatten().tolist())

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log.info("training finished")
