"""Small CNN classifier on synthetic 'images' (3x32x32, 10 classes).

Runs single-process (plain python) or DDP under torchrun (RANK/WORLD_SIZE in env).
--fault selects a real bug that is switched on only on --fault-rank (or everywhere if -1)
from --fault-step on.
"""
import argparse
import logging
import math
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "flatten-shape", "float-target", "label-range", "double-input",
                        "bad-norm", "bad-norm-anomaly", "bn-last-batch", "onecycle", "noisy"])
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--n", type=int, default=256)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--lr", type=float, default=1e-2)
args = p.parse_args()

distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

torch.manual_seed(0)
torch.set_num_threads(1)

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train_cnn")


def say(msg):
    if args.logfmt == "logging":
        log.info(msg)
    elif args.logfmt == "tqdm":
        from tqdm import tqdm
        tqdm.write(f"[rank{rank}] {msg}" if distributed else msg)
    else:
        print(f"[rank{rank}] {msg}" if distributed else msg, flush=True)


def faulty(step):
    return args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank) and step >= args.fault_step


class Net(nn.Module):
    def __init__(self, num_classes=10, flat=64 * 8 * 8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(flat, 128)
        self.bn3 = nn.BatchNorm1d(128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.bn3(self.fc1(x)))
        return self.fc2(x)


# ---- synthetic data (numpy, like reading from .npy files) ----
rng = np.random.default_rng(1234)
images = rng.normal(0.5, 0.25, size=(args.n, 3, 32, 32)).astype(np.float32)
labels = rng.integers(0, 10, size=(args.n,))
if args.fault in ("bad-norm", "bad-norm-anomaly") and (args.fault_rank < 0 or args.fault_rank == rank):
    # a couple of blank frames (constant images) slipped into the data
    images[[77, 201]] = 0.0

mean = images.mean(axis=(0, 2, 3), keepdims=True)
std = images.std(axis=(0, 2, 3), keepdims=True)
if args.fault in ("bad-norm", "bad-norm-anomaly"):
    # per-image standardisation (no epsilon)
    images_n = (images - images.mean(axis=(1, 2, 3), keepdims=True)) / images.std(axis=(1, 2, 3), keepdims=True)
else:
    images_n = (images - mean) / (std + 1e-6)
if args.fault == "double-input" and (args.fault_rank < 0 or args.fault_rank == rank):
    # normalisation done in float64, never cast back
    x_t = torch.from_numpy(images_n.astype(np.float64))
else:
    x_t = torch.from_numpy(images_n.astype(np.float32))

if args.fault == "label-range" and (args.fault_rank < 0 or args.fault_rank == rank):
    # this shard's annotation file has a new 'unknown' class (id 10) on a few samples; the model has 10 outputs
    labels[[201, 230, 251]] = 10
y_t = torch.from_numpy(labels)
if args.fault == "float-target" and (args.fault_rank < 0 or args.fault_rank == rank):
    # targets loaded as float column like a regression csv
    y_t = y_t.float().unsqueeze(1)

ds = TensorDataset(x_t, y_t)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
drop_last = args.fault != "bn-last-batch"
loader = DataLoader(ds, batch_size=args.batch_size, shuffle=(sampler is None), sampler=sampler,
                    drop_last=drop_last, num_workers=0)

if args.fault == "flatten-shape" and (args.fault_rank < 0 or args.fault_rank == rank):
    # someone changed the input size from 28x28 in the old config to 32x32 but not the flat dim
    model = Net(flat=64 * 7 * 7)
else:
    model = Net()
if distributed:
    model = nn.parallel.DistributedDataParallel(model)

opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
sched = None
if args.fault == "onecycle":
    # total_steps computed from the per-epoch batch count of a *different* batch size
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=args.epochs * (args.n // 32))
elif args.fault == "noisy":
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
crit = nn.CrossEntropyLoss()
if args.fault == "float-target" and (args.fault_rank < 0 or args.fault_rank == rank):
    crit = nn.CrossEntropyLoss()

say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} batches/epoch={len(loader)}")
if args.fault == "bad-norm-anomaly":
    torch.autograd.set_detect_anomaly(True)

step = 0
t0 = time.time()
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    model.train()
    it = loader
    if args.logfmt == "tqdm":
        from tqdm import tqdm
        it = tqdm(loader, desc=f"epoch {epoch}", disable=(rank != 0 and args.fault_rank != rank), file=sys.stderr,
                  mininterval=0, ncols=90)
    tot, correct, seen = 0.0, 0, 0
    for xb, yb in it:
        if args.fault == "noisy" and step == 0:
            # healthy but noisy: scheduler stepped before optimizer (warning), tensor re-wrapped (warning)
            sched.step()
            yb = torch.tensor(yb)
        out = model(xb)
        loss = crit(out, yb)
        if args.fault == "bad-norm" and not math.isfinite(loss.item()):
            raise RuntimeError(f"Loss is {loss.item()} at epoch {epoch} step {step}, stopping training.")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None and args.fault == "onecycle":
            sched.step()
        tot += loss.item() * xb.size(0)
        correct += (out.argmax(1) == yb).sum().item()
        seen += xb.size(0)
        if args.logfmt == "tqdm":
            it.set_postfix(loss=f"{loss.item():.4f}")
        elif step % 4 == 0:
            say(f"epoch {epoch} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.5f}")
        step += 1
    if sched is not None and args.fault == "noisy":
        sched.step()
    say(f"epoch {epoch} done: train_loss {tot / max(seen, 1):.4f} acc {correct / max(seen, 1):.3f} "
        f"({time.time() - t0:.1f}s)")

if rank == 0:
    torch.save((model.module if distributed else model).state_dict(), "/tmp/rr66as_cnn.pt")
    say("saved checkpoint to /tmp/rr66as_cnn.pt")
if distributed:
    dist.barrier()
    dist.destroy_process_group()
say("training finished")
