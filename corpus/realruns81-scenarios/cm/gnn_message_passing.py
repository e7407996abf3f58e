"""Graph neural network in plain torch (GCN/MPNN-style message passing with index_add_),
node classification on synthetic community graphs; single process or DDP (graph-level batches).

--fault: none | edge_weight_dtype | reentrant_ckpt | sparse_csr | uneven
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--graphs", type=int, default=12)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--find-unused", action="store_true")
args = p.parse_args()

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.manual_seed(0)
torch.set_num_threads(1)


def make_graph(seed, n=60, k=3, feat=16):
    rs = np.random.RandomState(seed)
    comm = rs.randint(0, k, n)
    src, dst = [], []
    for i in range(n):
        for j in range(i + 1, n):
            pr = 0.25 if comm[i] == comm[j] else 0.02
            if rs.rand() < pr:
                src += [i, j]
                dst += [j, i]
    x = (rs.randn(n, feat) + np.eye(k)[comm].repeat(feat // k + 1, 1)[:, :feat]).astype(np.float32)
    deg = np.bincount(np.array(dst), minlength=n) + 1
    w = 1.0 / np.sqrt(deg[np.array(src)] * deg[np.array(dst)])  # symmetric normalisation (float64)
    return (torch.from_numpy(x), torch.tensor([src, dst], dtype=torch.long),
            torch.from_numpy(w), torch.tensor(comm, dtype=torch.long))


class MPLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.msg = nn.Linear(dim, dim)
        self.upd = nn.Linear(2 * dim, dim)

    def forward(self, h, edge_index, edge_weight):
        src, dst = edge_index
        m = self.msg(h)[src] * edge_weight.unsqueeze(-1)
        agg = torch.zeros_like(h).index_add_(0, dst, m)
        return F.relu(self.upd(torch.cat([h, agg], -1)))


class GNN(nn.Module):
    def __init__(self, feat, hid, classes, rounds, use_ckpt=False):
        super().__init__()
        self.inp = nn.Linear(feat, hid)
        self.layer = MPLayer(hid)  # weights shared across message-passing rounds
        self.out = nn.Linear(hid, classes)
        self.rounds = rounds
        self.use_ckpt = use_ckpt

    def forward(self, x, edge_index, edge_weight):
        h = F.relu(self.inp(x))
        for _ in range(self.rounds):
            if self.use_ckpt:
                h = checkpoint(self.layer, h, edge_index, edge_weight, use_reentrant=True)
            else:
                h = self.layer(h, edge_index, edge_weight)
        return self.out(h)


n_graphs = args.graphs
if args.fault == "uneven":
    # each rank loads its own list of graph files; rank 0's directory has one more
    n_graphs = args.graphs + (1 if rank == args.fault_rank else 0)
graphs = [make_graph(1000 * rank + i) for i in range(n_graphs // world if not args.fault == "uneven"
                                                     else n_graphs // 2)]
if args.fault != "edge_weight_dtype":
    graphs = [(x, ei, w.float(), y) for (x, ei, w, y) in graphs]

model = GNN(16, args.hidden, 3, args.rounds, use_ckpt=args.fault == "reentrant_ckpt")
if distributed:
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
print(f"[rank {rank}] {len(graphs)} graphs, {sum(g[1].size(1) for g in graphs)} edges", flush=True)

for epoch in range(args.epochs):
    tot, correct, nodes = 0.0, 0, 0
    for gi, (x, ei, w, y) in enumerate(graphs):
        if args.fault == "sparse_csr":
            n = x.size(0)
            A = torch.sparse_coo_tensor(ei, w, (n, n)).to_sparse_csr()
            x = x + 0.1 * torch.sparse.mm(A, x)
        x = x.requires_grad_(args.fault == "reentrant_ckpt")
        logits = model(x, ei, w)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
        correct += (logits.argmax(-1) == y).sum().item()
        nodes += y.numel()
    print(f"[rank {rank}] epoch {epoch} loss {tot/len(graphs):.4f} node_acc {correct/nodes:.3f}", flush=True)

if distributed:
    dist.barrier()
    dist.destroy_process_group()
print(f"[rank {rank}] training complete", flush=True)
