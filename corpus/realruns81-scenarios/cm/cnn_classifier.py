"""Small CNN image classifier on synthetic 32x32 images (CIFAR-like), single process or DDP (gloo).

Fault flags (--fault): none | pool | float_targets | relu_inplace | view | shard_classes |
                       ddp_attr | resume_opt | resume_ddp_prefix | weights_only | ckpt_dir
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--num-classes", type=int, default=10)
p.add_argument("--ckpt", default="/work/rr81/cm/work/ckpt_cnn.pt")
p.add_argument("--resume", default="")
p.add_argument("--extra-block", action="store_true", help="add a third conv block (pool)")
p.add_argument("--log", action="store_true", help="use logging with timestamps")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--param-groups", action="store_true", help="separate no-weight-decay group")
args = p.parse_args()

distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.log:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train_cnn").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}" if distributed else msg, flush=True)

torch.manual_seed(0)
torch.set_num_threads(1)


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10, extra_block=False, inplace_bug=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.extra_block = extra_block
        if extra_block:
            self.conv3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.inplace_bug = inplace_bug
        # 32x32 -> pool -> 16x16 -> pool -> 8x8
        self.fc1 = nn.Linear(32 * 8 * 8, 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        if self.extra_block:
            x = self.pool(F.relu(self.conv3(x)))
        x = torch.flatten(x, 1)
        h = self.fc1(x)
        if self.inplace_bug:
            # "save memory": sigmoid output is needed by SigmoidBackward, then modified in place
            h = torch.sigmoid(h)
            h *= 2.0
        else:
            h = F.relu(h)
        return self.fc2(h)

    def features(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        return torch.flatten(x, 1)


# synthetic "CIFAR" data
N = 2048
g = torch.Generator().manual_seed(1)
images = torch.randn(N, 3, 32, 32, generator=g)
labels = torch.randint(0, args.num_classes, (N,), generator=g)
if args.fault == "shard_classes":
    # each rank reads its own shard of the label file; rank-local shard happens to miss class 9
    labels = labels % (args.num_classes - 1) if rank == args.fault_rank else labels
ds = TensorDataset(images, labels)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, drop_last=True,
                num_workers=args.workers)

num_classes = args.num_classes
if args.fault == "shard_classes":
    num_classes = int(labels.max().item()) + 1
    log(f"inferred num_classes={num_classes} from training labels")

model = SmallCNN(num_classes, extra_block=args.extra_block or args.fault == "pool",
                 inplace_bug=args.fault == "relu_inplace")
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
if args.param_groups:
    # no weight decay on BN and bias parameters
    decay = [p_ for n_, p_ in model.named_parameters() if p_.ndim > 1]
    no_decay = [p_ for n_, p_ in model.named_parameters() if p_.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": no_decay, "weight_decay": 0.0}], lr=0.05, momentum=0.9)
else:
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
crit = nn.CrossEntropyLoss()

start_epoch = 0
if args.resume:
    log(f"resuming from {args.resume}")
    ckpt = torch.load(args.resume, map_location="cpu")
    target = model.module if distributed else model
    target.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    start_epoch = ckpt.get("epoch", 0) + 1

n_params = sum(p.numel() for p in model.parameters())
log(f"model params: {n_params/1e3:.1f}K  world_size={world}  batches/epoch={len(dl)}")

step = 0
for epoch in range(start_epoch, start_epoch + args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    model.train()
    t0 = time.time()
    correct = total = 0
    for i, (x, y) in enumerate(dl):
        if i >= args.steps:
            break
        if args.fault == "float_targets" and step >= args.fault_step:
            # switched to label smoothing helper that returns one-hot floats ... but of wrong width
            y = F.one_hot(y, num_classes=num_classes + 1).float() * 0.9 + 0.01
        if args.fault == "view" and step >= args.fault_step:
            # data pipeline refactor: images now arrive channels-last (NHWC) and are permuted back
            x_nhwc = x.permute(0, 2, 3, 1)
            x = x_nhwc.view(-1, 3, 32, 32)
        out = model(x)
        loss = crit(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            pred = out.argmax(1)
            correct += (pred == (y if y.dim() == 1 else y.argmax(1))).sum().item()
            total += y.size(0)
        if step % 2 == 0:
            log(f"epoch {epoch} step {step} loss {loss.item():.4f} acc {correct/max(total,1):.3f} "
                f"lr {sched.get_last_lr()[0]:.4f}")
        if args.fault == "ddp_attr" and rank == args.fault_rank and step == args.fault_step:
            # visualise first-layer feature maps on rank 0
            feats = model.features(x[:4])
            log(f"feature map stats mean={feats.mean():.3f}")
        step += 1
    sched.step()
    log(f"epoch {epoch} done in {time.time()-t0:.1f}s train_acc={correct/max(total,1):.3f}")

    if rank == 0:
        state = {"model": (model.module if distributed else model).state_dict(),
                 "optimizer": opt.state_dict(), "epoch": epoch}
        if args.fault == "resume_ddp_prefix":
            state["model"] = model.state_dict()
        if args.fault == "weights_only":
            state["args"] = args
        os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
        torch.save(state, args.ckpt)
        log(f"saved checkpoint to {args.ckpt}")
    if distributed:
        dist.barrier()

if distributed:
    dist.destroy_process_group()
log("training finished")
