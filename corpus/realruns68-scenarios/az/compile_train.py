"""Tiny MLP/seq model trained with torch.compile on CPU, optionally under DDP (gloo).
--fault selects a real bug/misconfiguration on --fault-rank from --fault-step."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "datadep", "item", "recompile", "recompile_warn", "backend_sig", "graph_break", "ro_cache"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--backend", default="inductor")
p.add_argument("--log", action="store_true", help="use logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--compile-before-ddp", action="store_true")
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.log:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

torch.manual_seed(0)
faulty = args.fault != "none" and rank == args.fault_rank


class Block(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.ln = nn.LayerNorm(d)
        self.clip_mode = None

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.ln(x))))
        if self.clip_mode == "datadep":
            # skip the residual when activations explode (data-dependent branch)
            if h.abs().max() > 5.0:
                return x
        elif self.clip_mode == "item":
            scale = h.norm().item()
            h = h / max(scale, 1.0)
        elif self.clip_mode == "graph_break":
            print(f"    [debug] block activation mean={h.mean():.4f}")
        return x + h


class Net(nn.Module):
    def __init__(self, d=32, n=2, classes=8):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(1))


model = Net()
if args.fault in ("graph_break",) or (faulty and args.fault in ("datadep", "item")):
    for b in model.blocks:
        b.clip_mode = args.fault

if args.fault in ("recompile", "recompile_warn"):
    torch._dynamo.config.recompile_limit = 4
if faulty and args.fault == "recompile":
    torch._dynamo.config.fail_on_recompile_limit_hit = True

if distributed and not args.compile_before_ddp:
    model = nn.parallel.DistributedDataParallel(model)

backend = args.backend
if faulty and args.fault == "backend_sig":
    # home-made backend that logs graph size before handing over to inductor
    from torch._inductor.compile_fx import compile_fx
    def logging_backend(gm, example_inputs, mode):
        print(f"[rank{rank}] compiling graph with {len(gm.graph.nodes)} nodes (mode={mode})", flush=True)
        return compile_fx(gm, example_inputs)
    backend = logging_backend

cmodel = torch.compile(model, backend=backend, fullgraph=args.fullgraph, dynamic=False)
if distributed and args.compile_before_ddp:
    cmodel = nn.parallel.DistributedDataParallel(cmodel)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
log(f"world={world} fault={args.fault if faulty else 'none'} backend={args.backend} fullgraph={args.fullgraph}")

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", file=sys.stdout)
g = torch.Generator().manual_seed(rank)
for step in it:
    seqlen = 16
    if args.fault in ("recompile", "recompile_warn"):
        seqlen = 8 + 2 * step  # variable-length batches, no padding bucket
    x = torch.randn(8, seqlen, 32, generator=g) * (20.0 if step >= args.fault_step else 1.0)
    y = torch.randint(0, 8, (8,), generator=g)
    t0 = time.time()
    out = cmodel(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    log(f"step {step} seqlen={seqlen} loss={loss.item():.4f} dt={time.time()-t0:.2f}s")

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log("training finished")
