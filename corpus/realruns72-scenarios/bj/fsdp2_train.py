"""Tiny GPT-style LM trained with FSDP2 (fully_shard) on CPU/gloo."""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--layers", type=int, default=3)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--fault", default="none")   # tied_outside | rank_wrap | long_batch | none
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--long-seq", type=int, default=8192)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--bf16", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=32100)
args = p.parse_args()

class Block(nn.Module):
    def __init__(s, d):
        super().__init__(); s.ln1 = nn.LayerNorm(d); s.qkv = nn.Linear(d, 3 * d); s.proj = nn.Linear(d, d)
        s.ln2 = nn.LayerNorm(d); s.fc = nn.Linear(d, 4 * d); s.out = nn.Linear(4 * d, d); s.h = 4
    def forward(s, x):
        b, t, d = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(d, -1)
        q, k, v = (z.view(b, t, s.h, d // s.h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + s.proj(a)
        return x + s.out(F.gelu(s.fc(s.ln2(x))))

class GPT(nn.Module):
    def __init__(s, V, d, L):
        super().__init__(); s.wte = nn.Embedding(V, d); s.wpe = nn.Embedding(16384, d)
        s.blocks = nn.ModuleList(Block(d) for _ in range(L)); s.lnf = nn.LayerNorm(d)
        nn.init.normal_(s.wte.weight, std=0.02); nn.init.normal_(s.wpe.weight, std=0.01)
    def hidden(s, idx):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1]))
        for b in s.blocks: x = b(x)
        return s.lnf(x)
    def forward(s, idx):
        return s.hidden(idx) @ s.wte.weight.t()   # tied output embedding

def worker(rank=None, world=None):
    if rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    V = 512
    model = GPT(V, args.dim, args.layers)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if args.bf16 else MixedPrecisionPolicy()
    if not (args.fault == "rank_wrap" and rank == args.fault_rank):
        for blk in model.blocks:
            fully_shard(blk, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    nparam = sum(p.numel() for p in model.parameters())
    print(f"[rank{rank}] FSDP2 model ready: local shard numel={nparam}", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    t0 = time.time()
    for step in it:
        seq, bs = args.seq, args.bs
        if args.fault == "long_batch" and rank == args.fault_rank and step == args.fault_step:
            seq, bs = args.long_seq, args.bs * 8   # this rank's bucket: pad-to-longest + token-budget batching bug
        idx = torch.randint(0, V, (bs, seq), generator=g)
        tgt = torch.roll(idx, -1, 1)
        if args.fault == "tied_outside" and step >= args.fault_step:
            # refactor: compute logits in the loss helper to save memory via chunking
            h = model.hidden(idx)
            logits = h @ model.wte.weight.t()
        else:
            logits = model(idx)
        loss = F.cross_entropy(logits.float().reshape(-1, V), tgt.reshape(-1))
        loss.backward()
        opt.step(); opt.zero_grad()
        l = loss.detach().clone(); dist.all_reduce(l); l /= world
        if rank == 0:
            msg = f"step {step} loss {l.item():.4f} tok/s {args.bs*args.seq*world*(step+1)/(time.time()-t0):.0f}"
            if args.tqdm: it.set_postfix(loss=f"{l.item():.3f}")
            else: print(msg, flush=True)
    dist.barrier()
    if rank == 0: print("done: final loss %.4f" % l.item(), flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp_
        mp_.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker()
