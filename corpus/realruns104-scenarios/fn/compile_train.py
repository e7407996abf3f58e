"""Tiny transformer-ish LM trained with torch.compile (CPU), optionally under DDP/gloo.

--fault selects a real bug / misconfiguration:
  none            healthy (graph breaks from a logging print, recompiles from varying seq len)
  fullgraph-item  fullgraph=True model whose forward branches on a tensor value (data-dependent)
  recompile       variable sequence lengths, dynamic=False, fail_on_recompile_limit_hit set by config
  any other value (cxx, cache-ro, cache-small) plain model, fixed seq len; the fault is in the
                  environment (CXX, TORCHINDUCTOR_CACHE_DIR read-only or on a tiny filesystem)
"""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--backend", default="inductor")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--timestamps", action="store_true", help="python logging with timestamps")
p.add_argument("--recompile-limit", type=int, default=None)
p.add_argument("--strict-recompile", action="store_true")
args = p.parse_args()

if args.timestamps:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")

def out(msg):
    if args.timestamps:
        log.info(msg)
    else:
        print(msg, flush=True)

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))

torch.manual_seed(0)
torch.set_num_threads(1)

if args.recompile_limit is not None:
    torch._dynamo.config.recompile_limit = args.recompile_limit
if args.strict_recompile:
    torch._dynamo.config.fail_on_recompile_limit_hit = True

VOCAB, D = 128, 32

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        h = self.ln(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln(x))

class TinyLM(nn.Module):
    def __init__(self, debug_stats=False, clamp_rare=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(D, VOCAB)
        self.debug_stats = debug_stats
        self.clamp_rare = clamp_rare

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        if self.debug_stats:
            # logging inside forward -> graph break
            print(f"  [fwd] act rms={x.pow(2).mean().sqrt().item():.4f}")
        if self.clamp_rare:
            # skip the normalisation when activations are already small
            if x.abs().max() > 3.0:
                x = x / x.abs().max()
        return self.head(x)

model = TinyLM(debug_stats=(args.fault == "none"), clamp_rare=(args.fault == "fullgraph-item"))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

dyn = False if args.fault == "recompile" else None
cmodel = torch.compile(model, backend=args.backend, fullgraph=args.fullgraph, dynamic=dyn)

g = torch.Generator().manual_seed(rank)
out(f"rank {rank}/{world}: compiling with backend={args.backend} fullgraph={args.fullgraph}")
for step in range(args.steps):
    if args.fault == "recompile":
        seqlen = 8 + step  # packing disabled: every batch has a different length
    elif args.fault == "none":
        seqlen = 16 if step < 4 else 24
    else:
        seqlen = 16
    ids = torch.randint(0, VOCAB, (4, seqlen + 1), generator=g)
    t0 = time.time()
    logits = cmodel(ids[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    out(f"rank {rank} step {step} seqlen {seqlen} loss {loss.item():.4f} ({time.time()-t0:.2f}s)")

if distributed:
    dist.barrier()
    dist.destroy_process_group()
out(f"rank {rank}: training finished")
