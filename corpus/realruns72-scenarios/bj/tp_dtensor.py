"""Tiny transformer block trained with tensor parallel (parallelize_module) on a DeviceMesh, CPU/gloo."""
import argparse, os, sys, time, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, Replicate, distribute_tensor
from torch.distributed.tensor.parallel import (parallelize_module, ColwiseParallel,
                                               RowwiseParallel, SequenceParallel)

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--mesh", default="")          # e.g. "2,2"  (dp,tp)
p.add_argument("--tp", type=int, default=0)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--fault", default="none")     # heads_indiv | tied_plain | rank_plan | none
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--timestamps", action="store_true")
p.add_argument("--clip", type=float, default=0.0)
args = p.parse_args()

if args.timestamps:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("tp_train")
def say(msg):
    if args.timestamps: log.info(msg)
    else: print(msg, flush=True)

class Attn(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.h = h; s.hd = d // h
        s.wq = nn.Linear(d, d, bias=False); s.wk = nn.Linear(d, d, bias=False)
        s.wv = nn.Linear(d, d, bias=False); s.wo = nn.Linear(d, d, bias=False)
    def forward(s, x):
        b, t, _ = x.shape
        q = s.wq(x).view(b, t, -1, s.hd).transpose(1, 2)
        k = s.wk(x).view(b, t, -1, s.hd).transpose(1, 2)
        v = s.wv(x).view(b, t, -1, s.hd).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.wo(o.transpose(1, 2).reshape(b, t, -1))

class Block(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.ln1 = nn.LayerNorm(d); s.attn = Attn(d, h)
        s.ln2 = nn.LayerNorm(d); s.w1 = nn.Linear(d, 4 * d); s.w2 = nn.Linear(4 * d, d)
    def forward(s, x):
        x = x + s.attn(s.ln1(x))
        return x + s.w2(F.gelu(s.w1(s.ln2(x))))

class LM(nn.Module):
    def __init__(s, V, d, h, L=2):
        super().__init__(); s.emb = nn.Embedding(V, d)
        s.blocks = nn.ModuleList(Block(d, h) for _ in range(L)); s.ln = nn.LayerNorm(d)
        s.head = nn.Linear(d, V, bias=False)
    def forward(s, idx, tie_plain=False):
        x = s.emb(idx)
        for b in s.blocks: x = b(x)
        x = s.ln(x)
        if tie_plain:   # "weight tying" done by hand with the embedding table
            return x @ s.emb.weight.t()
        return s.head(x)

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    if args.mesh:
        shape = tuple(int(x) for x in args.mesh.split(","))
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=("dp", "tp"))
        tp_mesh = mesh["tp"]
    else:
        tp = args.tp or world
        tp_mesh = init_device_mesh("cpu", (tp,), mesh_dim_names=("tp",))
    tp_size = tp_mesh.size()
    say(f"[rank{rank}] world={world} tp_mesh={tp_mesh}")
    V = 256
    model = LM(V, args.dim, args.heads)
    plan = {}
    for i in range(len(model.blocks)):
        plan.update({
            f"blocks.{i}.attn.wq": ColwiseParallel(), f"blocks.{i}.attn.wk": ColwiseParallel(),
            f"blocks.{i}.attn.wv": ColwiseParallel(), f"blocks.{i}.attn.wo": RowwiseParallel(),
            f"blocks.{i}.w1": ColwiseParallel(), f"blocks.{i}.w2": RowwiseParallel(),
        })
    if args.fault == "rank_plan" and rank == args.fault_rank:
        # this rank's config had the MLP plan commented out
        plan = {k: v for k, v in plan.items() if not (k.endswith(".w1") or k.endswith(".w2"))}
    if args.fault == "tied_plain":
        plan["emb"] = RowwiseParallel(input_layouts=Replicate())
    model = parallelize_module(model, tp_mesh, plan)
    if args.fault == "shard_dim":
        # shard the embedding table on the hidden dim for the "sequence-parallel" variant (config uses dim index 2 = [B,T,D])
        model.emb.weight = nn.Parameter(distribute_tensor(model.emb.weight.data, tp_mesh, [Shard(2)]))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1234)
    for step in range(args.steps):
        idx = torch.randint(0, V, (4, 32), generator=g)
        tgt = torch.roll(idx, -1, 1)
        logits = model(idx, tie_plain=(args.fault == "tied_plain" and step >= args.fault_step))
        loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
        loss.backward()
        if args.clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        else:
            gn = torch.zeros(())
        opt.step(); opt.zero_grad(set_to_none=True)
        if rank == 0:
            say(f"step {step:3d} | loss {loss.item():.4f} | lr 3.0e-03")
    dist.barrier()
    if rank == 0: say("training finished")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
