"""DDP classifier training loop that logs key=value metrics with Python logging, every rank.

Data: synthetic 'sensor' features, per-rank shards built locally (the shard pre-processing is where
faults enter).  Flags:
  --raw-shard-rank R --raw-shard-step S   rank R's shard from step S was written without the
                                          normalisation step (raw ADC counts, up to ~4e4)
  --inf-shard-rank R --inf-shard-step S   rank R's shard contains a sentinel value 'inf' for a
                                          missing reading (parsed with float())
  --no-ddp                                model not wrapped in DDP (gradients never averaged)
  --param-check N                         every N steps compare a parameter checksum across ranks
  --leak-target                           feature builder appends the label column to the inputs
  --warmup-int                            lr warmup factor computed with integer division
  --nan-exit                              stop the run when the loss is not finite
"""
import argparse
import logging
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
p.add_argument("--every", type=int, default=20)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--warmup", type=int, default=50)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--raw-shard-rank", type=int, default=-1)
p.add_argument("--raw-shard-step", type=int, default=-1)
p.add_argument("--inf-shard-rank", type=int, default=-1)
p.add_argument("--inf-shard-step", type=int, default=-1)
p.add_argument("--no-ddp", action="store_true")
p.add_argument("--param-check", type=int, default=0)
p.add_argument("--leak-target", action="store_true")
p.add_argument("--warmup-int", action="store_true")
p.add_argument("--decay-iters", type=int, default=0, help="LinearLR decay length (0 = warmup+constant)")
p.add_argument("--nan-exit", action="store_true")
p.add_argument("--probs-head", action="store_true", help="model ends in Softmax (export-friendly) and NLLLoss is used")
p.add_argument("--no-clean-exit", action="store_true", help="(old behaviour) keep DDP alive at exit")
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--spike-step", type=int, default=-1, help="a batch of rare hard examples (healthy noise)")
args = p.parse_args()

torch.set_num_threads(1)
if "RANK" not in os.environ:  # plain `python script.py`: single-process group
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "45707"), RANK="0",
                      WORLD_SIZE="1")
dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()

logging.basicConfig(
    format="%(asctime)s %(levelname)s [rank{}] %(name)s: %(message)s".format(rank),
    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("trainer")
log.info("init done backend=gloo world_size=%d rank=%d pid=%d host=%s", world, rank, os.getpid(),
         os.uname().nodename)

NFEAT, NCLS = 24, 10
torch.manual_seed(0)
W_true = torch.randn(NFEAT, NCLS)
g = torch.Generator().manual_seed(100 + rank)


def make_batch(step):
    x = torch.randn(args.batch, NFEAT, generator=g)
    logits = x @ W_true + 0.5 * torch.randn(args.batch, NCLS, generator=g)
    y = logits.argmax(1)
    if args.spike_step >= 0 and step in (args.spike_step, args.spike_step + 1):
        y = torch.randint(0, NCLS, (args.batch,), generator=g)  # mislabeled hard batch
    if rank == args.raw_shard_rank and step >= args.raw_shard_step >= 0:
        x = (x * 4096.0 + 32768.0).round()  # 16-bit ADC counts, not standardised
    if rank == args.inf_shard_rank and step == args.inf_shard_step:
        x[7, 3] = float("inf")  # 'inf' sentinel of the CSV exporter for a missing reading
    if args.leak_target:
        x = torch.cat([x, F.one_hot(y, NCLS).float()], 1)
    return x, y


nin = NFEAT + (NCLS if args.leak_target else 0)
model = nn.Sequential(nn.Linear(nin, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, NCLS))
if args.probs_head:
    model.append(nn.Softmax(dim=-1))
if args.no_ddp:
    log.info("model built params=%d wrapper=none", sum(q.numel() for q in model.parameters()))
    net = model
else:
    net = DDP(model)
    log.info("model built params=%d wrapper=DDP bucket_cap_mb=25", sum(q.numel() for q in model.parameters()))
opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=0.01)


def lr_factor(step):
    if args.warmup_int:
        return min(1, step // args.warmup) if step < args.warmup else 1.0
    return min(1.0, (step + 1) / args.warmup)


if args.decay_iters:
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=args.decay_iters)
else:
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
log.info("start training steps=%d batch_per_rank=%d lr=%g warmup=%d", args.steps, args.batch, args.lr,
         args.warmup)
t0 = time.time()
for step in range(1, args.steps + 1):
    x, y = make_batch(step)
    out = net(x)
    if args.probs_head:
        loss = F.nll_loss(out, y)
    else:
        loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    if args.clip > 0:
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), args.clip).item()
    else:
        gn = torch.norm(torch.stack([q.grad.norm() for q in net.parameters()])).item()
    opt.step()
    sched.step()
    lv = loss.item()
    acc = (out.argmax(1) == y).float().mean().item()
    if step % args.every == 0 or not math.isfinite(lv) or (lv > 20 and step % 5 == 0) or lv > 3.0:
        dt = time.time() - t0
        t0 = time.time()
        log.info("step=%d loss=%.4f acc=%.3f grad_norm=%.4g lr=%.3e samples_per_s=%.0f", step, lv, acc, gn,
                 sched.get_last_lr()[0], args.batch * args.every / max(dt, 1e-6))
    if args.nan_exit and not math.isfinite(lv):
        log.error("loss is %s at step %d, stopping (last good checkpoint is from the previous save)", lv, step)
        sys.exit(3)
    if args.param_check and step % args.param_check == 0:
        cs = torch.tensor([sum(q.detach().double().sum().item() for q in model.parameters())], dtype=torch.float64)
        allc = [torch.zeros_like(cs) for _ in range(world)]
        dist.all_gather(allc, cs)
        vals = [c.item() for c in allc]
        if max(vals) - min(vals) > 1e-6 * max(1.0, abs(vals[0])):
            log.error("param checksum mismatch at step=%d: %s", step,
                      " ".join("rank%d=%.8f" % (i, v) for i, v in enumerate(vals)))
            sys.exit(4)
        log.info("param checksum ok step=%d value=%.8f", step, vals[0])
log.info("training finished steps=%d final_loss=%.4f", args.steps, lv)
dist.barrier()
if not args.no_clean_exit:
    del net, opt, sched
dist.destroy_process_group()
