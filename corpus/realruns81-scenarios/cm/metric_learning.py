"""Metric learning (embedding net + triplet / contrastive InfoNCE loss) on synthetic clustered vectors,
DDP with cross-rank negatives via all_gather.

--fault: none | gather_nograd | rank0_eval_allreduce | triplet_args | slow_rank
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=64)
p.add_argument("--temp", type=float, default=0.1)
p.add_argument("--eval-every", type=int, default=5)
p.add_argument("--loss", default="infonce", choices=["infonce", "triplet"])
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s | rank {rank} | %(levelname)-7s | %(message)s")
log = logging.getLogger("metric")
torch.manual_seed(0)
torch.set_num_threads(1)

NCLS, DIM = 20, 32
centers = torch.randn(NCLS, DIM) * 3


def sample(bs, gen):
    y = torch.randint(0, NCLS, (bs,), generator=gen)
    a = centers[y] + torch.randn(bs, DIM, generator=gen)
    pos = centers[y] + torch.randn(bs, DIM, generator=gen)
    return a, pos, y


class EmbedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


model = nn.parallel.DistributedDataParallel(EmbedNet())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
gen = torch.Generator().manual_seed(rank + 1)
triplet = nn.TripletMarginLoss(margin=0.2)


@torch.no_grad()
def recall_at_1(m):
    a, pos, y = sample(256, torch.Generator().manual_seed(99))
    ea, ep = m(a), m(pos)
    nn_idx = (ea @ ep.T).argmax(1)
    r = (y[nn_idx] == y).float().mean()
    return r


log.info("world=%d bs/rank=%d loss=%s", world, args.bs, args.loss)
n_train = args.steps * args.bs + (1 if args.fault == "tail_batch" else 0)  # rows in this rank's shard
batch_sizes = [min(args.bs, n_train - i) for i in range(0, n_train, args.bs)]
for step, cur_bs in enumerate(batch_sizes):
    a, pos, y = sample(cur_bs, gen)
    za, zp = model(a), model(pos)
    if args.loss == "triplet" or args.fault == "triplet_args":
        neg_idx = torch.roll(torch.arange(cur_bs), 1)
        zn = zp[neg_idx]
        if args.fault == "triplet_args":
            # pass the similarity matrix instead of the embeddings
            loss = triplet(za, zp, za @ zn.T)
        else:
            loss = triplet(za, zp, zn)
    else:
        # cross-rank negatives
        gathered = [torch.zeros_like(zp) for _ in range(world)]
        dist.all_gather(gathered, zp)
        if args.fault == "gather_nograd":
            all_p = torch.cat(gathered)
            all_a = [torch.zeros_like(za) for _ in range(world)]
            dist.all_gather(all_a, za)
            all_a = torch.cat(all_a)
        else:
            gathered[rank] = zp  # keep local grads
            all_p = torch.cat(gathered)
            all_a = za
        logits = all_a @ all_p.T / args.temp
        offset = 0 if args.fault == "gather_nograd" else rank * cur_bs
        labels = torch.arange(all_a.size(0)) + offset
        loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.fault == "slow_rank" and rank == args.fault_rank:
        time.sleep(0.6)  # this rank reads from a throttled network share
    if step % args.eval_every == 0:
        if args.fault == "rank0_eval_allreduce":
            if rank == 0:
                r1 = recall_at_1(model.module)
                dist.all_reduce(r1)  # average across ranks
                log.info("step %d recall@1 %.3f", step, r1.item() / world)
        else:
            r1 = recall_at_1(model.module)
            dist.all_reduce(r1)
            if rank == 0:
                log.info("step %d recall@1 %.3f", step, r1.item() / world)
    log.info("step %d loss %.4f", step, loss.item())

dist.barrier()
dist.destroy_process_group()
log.info("finished")
