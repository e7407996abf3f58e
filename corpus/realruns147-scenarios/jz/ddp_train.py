"""Small DDP classifier trained under torchrun (gloo, CPU).

Fault selection (scenario flags; names chosen not to clash with torchrun options):
  --fault none|scaler_skip|ckpt_retry|torchmetrics|determinism|unused|nan|keyerror|barrier
  --fault-rank R   --fault-step S
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--tslog", action="store_true")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--lr", type=float, default=0.05)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.tslog:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("train")

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, with_aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))
        self.aux = nn.Linear(32, 4) if with_aux else None

    def forward(self, x, use_aux=False):
        h = self.body[0](x)
        h = self.body[1](h)
        h = self.body[2](h)
        if use_aux and self.aux is not None:
            return self.aux(h)
        return self.body[3](h)


g = torch.Generator().manual_seed(1)
X = torch.randn(512, 16, generator=g)
Y = (X[:, :4].argmax(1)).long()
ds = TensorDataset(X, Y)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
dl = DataLoader(ds, batch_size=16, sampler=sampler)

model = Net(with_aux=(args.fault == "unused"))
if args.fault == "determinism":
    # each rank seeds its own dropout stream "for diversity"
    torch.manual_seed(1234 + rank)
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

scaler = None
if args.fault == "scaler_skip":
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 24, growth_interval=3)

metric = None
if args.fault == "torchmetrics":
    import torchmetrics
    metric = torchmetrics.classification.MulticlassAccuracy(num_classes=4, validate_args=True)

label_names = {0: "up", 1: "down", 2: "left", 3: "right"}

it = iter(dl)
steps = range(1, args.steps + 1)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    steps = tqdm(steps, desc="train", dynamic_ncols=False, ncols=90)

for step in steps:
    try:
        xb, yb = next(it)
    except StopIteration:
        sampler.set_epoch(step)
        it = iter(dl)
        xb, yb = next(it)

    if args.fault == "nan" and rank == args.fault_rank and step >= args.fault_step:
        # features pulled from a bad shard: a log of a zero count
        xb = xb.clone()
        xb[0, 3] = torch.log(torch.tensor(0.0)) * 0.0

    use_aux = args.fault == "unused" and rank == args.fault_rank and step >= args.fault_step
    with torch.autocast("cpu", dtype=torch.float16, enabled=(scaler is not None)):
        out = ddp(xb, use_aux=use_aux)
        loss = F.cross_entropy(out.float(), yb)

    if args.fault == "keyerror" and rank == args.fault_rank and step == args.fault_step:
        # a batch whose label was remapped upstream
        yb = yb.clone()
        yb[0] = 7
    if args.fault == "keyerror":
        names = [label_names[int(t)] for t in yb]

    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < scale_before:
            log.warning("step %d: gradient overflow detected (inf/nan in grads); optimizer step skipped, "
                        "loss scale reduced %.1f -> %.1f", step, scale_before, scaler.get_scale())
    else:
        loss.backward()
        opt.step()

    if metric is not None:
        with torch.no_grad():
            preds = out.argmax(1)
            if rank == args.fault_rank and step >= args.fault_step:
                # eval head switched to the 5-way "unknown" label set
                preds = preds.clone()
                preds[:3] = 4
            metric.update(preds, yb)

    if args.fault == "ckpt_retry" and rank == 0 and step == args.fault_step:
        path = os.path.join(args.ckpt_dir, f"step{step}.pt")
        for attempt in range(1, 4):
            try:
                torch.save(model.state_dict(), path)
                log.info("saved checkpoint %s (attempt %d)", path, attempt)
                break
            except Exception:
                log.exception("checkpoint save failed (attempt %d/3), will retry in 1s", attempt)
                os.makedirs(args.ckpt_dir, exist_ok=True)
                time.sleep(1)

    if args.fault == "barrier" and rank == args.fault_rank and step == args.fault_step:
        log.info("rank %d: refreshing data index before next epoch", rank)
        time.sleep(60)
    if args.fault == "barrier" and step == args.fault_step:
        dist.monitored_barrier(timeout=timedelta(seconds=10))

    msg = f"step {step} loss {loss.item():.4f}"
    if metric is not None:
        msg += f" acc {metric.compute().item():.3f}"
    if args.tqdm and rank == 0:
        steps.set_postfix(loss=f"{loss.item():.3f}")
    elif step % 2 == 0 or args.fault in ("nan",):
        log.info("rank %d %s", rank, msg)

if args.fault == "determinism":
    # sanity check: every rank must hold identical weights after DDP training
    flat = torch.cat([q.detach().flatten() for q in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    # also replay the last batch and compare the outputs across ranks
    model.train()
    o = model(X[:8])
    outs = [torch.zeros_like(o) for _ in range(world)]
    dist.all_gather(outs, o.detach())
    for r in range(1, world):
        torch.testing.assert_close(gathered[r], gathered[0])
        torch.testing.assert_close(outs[r], outs[0], msg=lambda m: f"rank {r} vs rank 0 replay: {m}")
    log.info("determinism check passed")

log.info("rank %d finished training", rank)
dist.barrier()
dist.destroy_process_group()
