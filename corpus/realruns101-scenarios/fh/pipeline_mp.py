"""Manual 2-stage pipeline (model parallel) over gloo point-to-point: stage 0 = embed+blocks, stage 1 = blocks+head."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "partial_batch", "soft_labels"])
p.add_argument("--samples", type=int, default=70)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--epochs", type=int, default=1)
a = p.parse_args()
dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2
D, T, V, C = 32, 10, 50, 6
torch.manual_seed(rank)
if rank == 0:
    stage = nn.Sequential(nn.Embedding(V, D), nn.Flatten(1), nn.Linear(D * T, 128), nn.ReLU())
else:
    stage = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, C))
opt = torch.optim.Adam(stage.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(0)
X = torch.randint(0, V, (a.samples, T), generator=g)
if a.fault == "soft_labels":
    Y = torch.softmax(torch.randn(a.samples, C, generator=g), -1).argmax(-1).float()  # labels exported as float column
else:
    Y = torch.randint(0, C, (a.samples,), generator=g)
n_batches = (a.samples + a.bs - 1) // a.bs if a.fault == "partial_batch" else a.samples // a.bs
print(f"[stage{rank}] params={sum(p_.numel() for p_ in stage.parameters())} batches/epoch={n_batches}", flush=True)
for ep in range(a.epochs):
    for i in range(n_batches):
        xb, yb = X[i * a.bs:(i + 1) * a.bs], Y[i * a.bs:(i + 1) * a.bs]
        if rank == 0:
            act = stage(xb)
            dist.send(act.detach(), dst=1)
            grad = torch.empty_like(act)
            dist.recv(grad, src=1)
            act.backward(grad)
        else:
            act = torch.empty(a.bs, 128)          # receive buffer sized from the config batch size
            dist.recv(act, src=0)
            act.requires_grad_(True)
            out = stage(act)
            loss = F.cross_entropy(out, yb[: act.shape[0]] if a.fault != "partial_batch" else Y[i * a.bs:i * a.bs + a.bs])
            loss.backward()
            dist.send(act.grad, dst=0)
            if i % 2 == 0:
                print(f"[stage1] epoch {ep} batch {i}/{n_batches} loss {loss.item():.4f}", flush=True)
        opt.step(); opt.zero_grad()
dist.barrier()
print(f"[stage{rank}] done", flush=True)
dist.destroy_process_group()
