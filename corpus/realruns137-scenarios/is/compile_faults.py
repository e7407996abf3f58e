"""Tiny DDP/single-process trainer that uses torch.compile; flags select a fault.

--fault:
  none            healthy compile run
  graphbreak      print()/item() inside forward -> graph breaks, training continues
  fullgraph       .item()-driven branch in forward with fullgraph=True on --fault-rank
  recompile       varying sequence length with dynamic=False, fail_on_recompile_limit_hit
  recompile-warn  varying sequence length, default config (limit hit -> eager fallback)
  customop        custom torch.library op without a fake/meta kernel
  backend         user-written debug backend that calls gm.graph.print_tabular()
  prefix          save compiled model state_dict, reload into plain model
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--backend-name", default="inductor")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--inductor-options", default="", help="k=v,k=v passed as torch.compile(options=...)")
args = p.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(0)
VOCAB, D = 97, 32


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.ff1 = nn.Linear(D, 4 * D)
        self.ff2 = nn.Linear(4 * D, D)
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, x):
        h = self.emb(x)
        h = h + self.ff2(F.gelu(self.ff1(self.ln(h))))
        if args.fault == "graphbreak":
            print(f"[rank{rank}] debug: activation mean {h.mean().item():.4f}", flush=True)
        if args.fault == "fullgraph" and (args.fault_rank < 0 or rank == args.fault_rank):
            # skip the residual scaling when activations are already small
            if h.abs().max() > 1.0:
                h = h / h.abs().max()
        if args.fault == "customop":
            h = torch.ops.mylib.rms_clip(h, 3.0)
        return self.head(h)


if args.fault == "customop":
    lib = torch.library.Library("mylib", "DEF")
    lib.define("rms_clip(Tensor x, float c) -> Tensor")

    def rms_clip_cpu(x, c):
        r = x.pow(2).mean(-1, keepdim=True).sqrt().clamp(min=1e-6)
        return x * torch.clamp(c / r, max=1.0)
    lib.impl("rms_clip", rms_clip_cpu, "CPU")
    lib.impl("rms_clip", rms_clip_cpu, "AutogradCPU")

model = Block()
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)

compile_kwargs = {"backend": args.backend_name}
if args.inductor_options:
    compile_kwargs["options"] = dict(kv.split("=", 1) for kv in args.inductor_options.split(","))
    compile_kwargs["options"] = {k: (v == "True" if v in ("True", "False") else v) for k, v in compile_kwargs["options"].items()}
if args.fault == "fullgraph":
    compile_kwargs["fullgraph"] = True
if args.fault in ("recompile", "recompile-warn"):
    compile_kwargs["dynamic"] = False
    torch._dynamo.config.recompile_limit = 4
    if args.fault == "recompile":
        torch._dynamo.config.fail_on_recompile_limit_hit = True

if args.fault == "backend":
    def debug_backend(gm, example_inputs):
        # print the captured FX graph before running it, handy while tuning
        print(f"[rank{rank}] captured graph with {len(list(gm.graph.nodes))} nodes", flush=True)
        gm.graph.print_tabular()
        return gm.forward
    compile_kwargs["backend"] = debug_backend

cmodel = torch.compile(model, **compile_kwargs)
opt = torch.optim.AdamW(cmodel.parameters(), lr=3e-3)
log(f"world={world} backend={compile_kwargs['backend'] if isinstance(compile_kwargs['backend'], str) else 'debug_backend'} "
    f"fault={args.fault} torch={torch.__version__}")

gen = torch.Generator().manual_seed(1234 + rank)
it = range(args.steps)
if args.use_tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", file=sys.stdout, mininterval=0, ncols=90)

t0 = time.time()
for step in it:
    seqlen = 16
    if args.fault in ("recompile", "recompile-warn"):
        seqlen = 8 + step  # variable-length buckets: a new shape every step
    x = torch.randint(0, VOCAB, (4, seqlen), generator=gen)
    y = torch.roll(x, -1, dims=1)
    logits = cmodel(x)
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if not args.use_tqdm or step % 2 == 0:
        log(f"step {step} seqlen {seqlen} loss {loss.item():.4f} elapsed {time.time()-t0:.1f}s")

if args.fault == "prefix":
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"model_rank{rank}.pt")
    if rank == 0:
        torch.save(cmodel.state_dict(), path)
        log(f"saved checkpoint {path}")
    if world > 1:
        dist.barrier()
    # evaluation: reload into a fresh, uncompiled model
    fresh = Block()
    sd = torch.load(os.path.join(args.ckpt_dir, "model_rank0.pt"), map_location="cpu")
    fresh.load_state_dict(sd)
    log("reloaded checkpoint for eval")

log("training finished")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
