"""torch.distributed.checkpoint (DCP) save/resume with a hand-sharded embedding table (rows split by world size).
--phase save|load. Resuming with a different number of ranks changes the local shard shape."""
import argparse, datetime, os, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

p = argparse.ArgumentParser()
p.add_argument("--phase", default="save"); p.add_argument("--ckpt", default="runs/dcp_ckpt")
p.add_argument("--rows", type=int, default=1200); p.add_argument("--steps", type=int, default=10)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
rows_per_rank = args.rows // world
shard = nn.Parameter(torch.randn(rows_per_rank, 32) * 0.02)  # this rank's slice of the table
head = nn.Linear(32, 8)
for q in head.parameters(): dist.broadcast(q.data, 0)
opt = torch.optim.SGD([shard, *head.parameters()], lr=0.1)
state = {"emb_shard": shard, "head": head.state_dict(), "step": torch.tensor(0)}
print(f"[rank{rank}] world={world} local shard rows {rows_per_rank} ({rank*rows_per_rank}..{(rank+1)*rows_per_rank-1})", flush=True)
if args.phase == "load":
    t0 = time.time()
    print(f"[rank{rank}] loading DCP checkpoint from {args.ckpt}", flush=True)
    dcp.load(state, checkpoint_id=args.ckpt)
    head.load_state_dict(state["head"])
    print(f"[rank{rank}] resumed at step {int(state['step'])} in {time.time()-t0:.2f}s", flush=True)
start = int(state["step"])
for step in range(start + 1, start + args.steps + 1):
    idx = torch.randint(0, rows_per_rank, (16,))
    out = head(shard[idx]); loss = F.cross_entropy(out, idx % 8)
    opt.zero_grad(); loss.backward()
    for q in head.parameters():
        dist.all_reduce(q.grad); q.grad /= world
    opt.step()
    if step % 5 == 0:
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
state["step"] = torch.tensor(start + args.steps)
if args.phase == "save":
    dcp.save(state, checkpoint_id=args.ckpt)
    print(f"[rank{rank}] saved DCP checkpoint to {args.ckpt}", flush=True)
dist.barrier(); dist.destroy_process_group()
