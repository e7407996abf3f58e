"""FSDP (v1) on CPU/gloo: use_orig_params, frozen parameters, mixed precision, mixed parameter dtypes."""
import argparse, os, sys, functools, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "freeze_emb", "bf16_norm"])
p.add_argument("--use-orig-params", action="store_true")
p.add_argument("--mp", default="none", choices=["none", "bf16"])
p.add_argument("--wrap", default="block", choices=["block", "root"])
p.add_argument("--steps", type=int, default=6)
a = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()

class Block(nn.Module):
    def __init__(s, d):
        super().__init__(); s.ln = nn.LayerNorm(d); s.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
    def forward(s, x):
        return x + s.ff(s.ln(x))

class Model(nn.Module):
    def __init__(s, v=128, d=64):
        super().__init__(); s.tok = nn.Embedding(v, d); s.pos = nn.Embedding(32, d)
        s.blocks = nn.Sequential(*[Block(d) for _ in range(2)]); s.norm = nn.LayerNorm(d); s.lm = nn.Linear(d, v)
    def forward(s, idx):
        x = s.tok(idx) + s.pos(torch.arange(idx.shape[1]))
        return s.lm(s.norm(s.blocks(x)))

torch.manual_seed(0)
m = Model()
if a.fault == "freeze_emb" or a.use_orig_params:
    # keep pretrained embeddings frozen
    m.tok.weight.requires_grad_(False); m.pos.weight.requires_grad_(False)
if a.fault == "bf16_norm":
    # final norm kept in bf16 "to match the exported checkpoint"
    m.norm.to(torch.bfloat16)
    m.norm.register_forward_pre_hook(lambda mod, inp: (inp[0].to(torch.bfloat16),))
    m.norm.register_forward_hook(lambda mod, inp, out: out.float())
mp_cfg = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16) if a.mp == "bf16" else None
policy = ModuleWrapPolicy({Block}) if a.wrap == "block" else None
if rank == 0:
    print(f"wrapping with FSDP: use_orig_params={a.use_orig_params} mp={a.mp} wrap={a.wrap} world={world}", flush=True)
model = FSDP(m, auto_wrap_policy=policy, use_orig_params=a.use_orig_params, mixed_precision=mp_cfg,
             device_id=torch.device("cpu"), sharding_strategy=ShardingStrategy.FULL_SHARD)
opt = torch.optim.AdamW([p_ for p_ in model.parameters() if p_.requires_grad], lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(a.steps):
    idx = torch.randint(0, 128, (4, 17), generator=g)
    logits = model(idx[:, :-1])
    loss = F.cross_entropy(logits.float().reshape(-1, 128), idx[:, 1:].reshape(-1))
    loss.backward()
    model.clip_grad_norm_(1.0)
    opt.step(); opt.zero_grad()
    l = loss.detach().clone(); dist.all_reduce(l); l /= world
    if rank == 0:
        print(f"step {step}: loss={l.item():.4f}", flush=True)
dist.barrier()
if rank == 0:
    print("training complete", flush=True)
dist.destroy_process_group()
