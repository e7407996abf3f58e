"""Tiny sequence classifier / tagger trained with DDP (gloo, CPU).

Synthetic "audio frame" features -> linear proj -> 1-layer self-attention -> pooled head (+ token head).
Flags select a data or config problem on one rank at one step, the way it turns up in real pipelines.
Works under torchrun (RANK/WORLD_SIZE set) or as a single process.
"""
import argparse, math, os, sys, time, logging, warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "log0", "masked_softmax", "all_ignore", "zero_norm", "explode",
                        "fp16_overflow", "spike", "diverge", "bf16_cmvn"])
p.add_argument("--bad-rank", type=int, default=0)
p.add_argument("--bad-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optim", default="adamw", choices=["adamw", "sgd"])
p.add_argument("--check", default="none", choices=["none", "isfinite", "clip_nonfinite"])
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--anomaly", action="store_true")
p.add_argument("--amp", default="none", choices=["none", "fp16", "bf16"])
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--log-all-ranks", action="store_true")
p.add_argument("--reduce-loss", action="store_true", help="all-reduce loss before logging")
p.add_argument("--noisy", action="store_true")
p.add_argument("--depth", type=int, default=1)
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")

def say(msg, all_ranks=False):
    if rank != 0 and not (all_ranks or args.log_all_ranks):
        return
    if args.logfmt == "logging":
        log.info(msg)
    else:
        print(msg if world == 1 else f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(1234)
B, T, FEAT, D, C = 8, 12, 16, 32, 5

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.o = nn.Linear(D, D)
        self.ln = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, h, mask):
        q, k, v = self.q(h), self.k(h), self.v(h)
        scores = q @ k.transpose(1, 2) / math.sqrt(D)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        h = h + self.o(attn @ v)
        return h + self.ff(self.ln(h))

class FrameClassifier(nn.Module):
    def __init__(self, depth, l2norm, tagging=False, cmvn=False):
        super().__init__()
        self.cmvn = cmvn
        self.l2norm = l2norm
        self.proj = nn.Linear(FEAT, D)
        self.blocks = nn.ModuleList([Block() for _ in range(depth)])
        self.tagging = tagging
        self.head = nn.Linear(D, C)

    def forward(self, x, mask):
        if self.l2norm:
            x = x / x.norm(dim=-1, keepdim=True)      # per-frame L2 normalisation
        h = self.proj(x)
        if self.cmvn:                                  # per-utterance mean/variance norm over time
            mu = h.mean(1, keepdim=True)
            var = (h * h).mean(1, keepdim=True) - mu * mu
            h = (h - mu) * torch.rsqrt(var + 1e-5)
        for blk in self.blocks:
            h = blk(h, mask)
        if self.tagging:
            return None, self.head(h)
        m = mask.unsqueeze(-1).float()
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled), None

model = FrameClassifier(args.depth, l2norm=args.fault == "zero_norm",
                        tagging=args.fault == "all_ignore", cmvn=args.fault == "bf16_cmvn")
if args.fault == "explode":
    for prm in model.parameters():
        nn.init.normal_(prm, std=0.15)
if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model)

if args.optim == "sgd":
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

if args.fault == "diverge":
    # linear warmup whose peak was set in "steps" units by mistake
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 + s * 1.5)
else:
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))

if args.anomaly:
    torch.autograd.set_detect_anomaly(True)

proto = torch.randn(C, FEAT, generator=torch.Generator().manual_seed(7))

def make_batch(step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    y = torch.randint(0, C, (B,), generator=g)
    x = proto[y][:, None, :] + 0.8 * torch.randn(B, T, FEAT, generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    x = x * mask.unsqueeze(-1) + (~mask).unsqueeze(-1) * 1e-3   # padded frames hold a small dither
    tags = torch.where(mask, y[:, None].expand(B, T), torch.full((B, T), -100))
    tags[:, : T // 4] = -100                                       # prompt/context frames are not scored
    bad = rank == args.bad_rank and step == args.bad_step
    if args.fault == "bf16_cmvn":
        mask[:] = True                         # fixed-length crops, no padding
        tags = torch.where(mask, y[:, None].expand(B, T), torch.full((B, T), -100))
        x = proto[y][:, None, :] + 0.8 * torch.randn(B, T, FEAT, generator=g)
        x = x + torch.randn(B, 1, FEAT, generator=g) * (30.0 if bad else 2.0)   # channel DC offset
    if bad and args.fault == "masked_softmax":
        lengths[3] = 0                         # clip became empty after VAD trimming
        mask[3] = False
        tags[3] = -100
    if bad and args.fault == "all_ignore":
        tags[:] = -100                         # every clip shorter than the context window
    if bad and args.fault == "zero_norm":
        x[5] = 0.0                             # digital silence: all-zero feature frames
    if bad and args.fault == "log0":
        x = x * 4000.0                         # shard written without feature normalisation
    if bad and args.fault == "fp16_overflow":
        x = x + 3000.0 * torch.rand(B, T, FEAT, generator=g)  # un-normalised raw energies
    if args.fault == "spike" and rank == args.bad_rank and step == args.bad_step:
        x = x * 25.0                             # one shard recorded with a different gain
    return x, mask, y, tags

autocast = torch.autocast("cpu", dtype=torch.float16 if args.amp == "fp16" else torch.bfloat16,
                          enabled=args.amp != "none")

say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} fault-free config: "
    f"lr={args.lr} optim={args.optim} amp={args.amp} clip={args.clip or 'off'}")
if distributed:
    dist.barrier()

it = range(args.steps)
if args.logfmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, file=sys.stderr)

t0 = time.time()
for step in it:
    x, mask, y, tags = make_batch(step)
    with autocast:
        logits, tag_logits = model(x, mask)
        if args.fault == "all_ignore":
            loss = F.cross_entropy(tag_logits.float().reshape(-1, C), tags.reshape(-1), ignore_index=-100)
        elif args.fault == "log0":
            probs = logits.float().softmax(-1)
            loss = -torch.log(probs.gather(1, y[:, None])).mean()   # hand-rolled NLL
        else:
            loss = F.cross_entropy(logits.float(), y)
    if args.check == "isfinite" and not torch.isfinite(loss):
        raise FloatingPointError(f"Non-finite loss {loss.item()} at step {step} on rank {rank}")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if args.check == "clip_nonfinite":
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip or 1.0, error_if_nonfinite=True)
    elif args.clip:
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    else:
        gn = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    opt.step()
    sched.step()
    shown = torch.tensor(loss) if args.noisy else loss.detach().clone()
    if args.reduce_loss and distributed:
        dist.all_reduce(shown)
        shown /= world
    msg = f"step {step:3d} | loss {shown.item():.4f} | grad_norm {gn.item():.3f} | lr {sched.get_last_lr()[0]:.2e}"
    if args.logfmt == "tqdm" and rank == 0:
        it.set_postfix(loss=f"{shown.item():.4f}", gn=f"{gn.item():.2f}")
        if step % 5 == 0:
            it.write(msg)
    else:
        say(msg)
    time.sleep(0.05)

say(f"finished {args.steps} steps in {time.time()-t0:.1f}s, final loss {shown.item():.4f}")
if distributed:
    dist.barrier()
    dist.destroy_process_group()
