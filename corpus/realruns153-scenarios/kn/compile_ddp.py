"""torch.compile'd model under DDP (gloo, CPU) with selectable compile-time faults."""
import argparse, os, time, random
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")   # none | mixup-float | datadep | printdebug
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fullgraph", type=int, default=0)
p.add_argument("--backend", default="inductor")
p.add_argument("--strict-recompile", type=int, default=0)
p.add_argument("--dynamic", default="auto")
p.add_argument("--compile-inner", type=int, default=0)
args = p.parse_args()

class Block(nn.Module):
    def __init__(s, d=32):
        super().__init__()
        s.ln = nn.LayerNorm(d); s.fc1 = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)
    def forward(s, x):
        return x + s.fc2(F.gelu(s.fc1(s.ln(x))))

class Model(nn.Module):
    def __init__(s):
        super().__init__()
        s.inp = nn.Linear(16, 32); s.blocks = nn.Sequential(Block(), Block()); s.out = nn.Linear(32, 4)
    def forward(s, x, lam=None, x2=None):
        if lam is not None:
            x = lam * x + (1 - lam) * x2        # mixup inside the model
        h = s.blocks(s.inp(x))
        if args.fault == "datadep":
            # renormalise activations when they grow large
            if h.abs().max() > 5.0:
                h = h / h.abs().max()
        if args.fault == "printdebug":
            print(f"  [debug] activation mean {h.mean().item():.4f}")
        return s.out(h)

def inspect_backend(gm, example_inputs):
    # custom backend from the torch.compile tutorial: show each captured graph, then run it eagerly
    print(f"captured graph with {len(gm.graph.nodes)} nodes")
    gm.graph.print_tabular()
    return gm.forward

def main():
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    if args.strict_recompile:
        torch._dynamo.config.fail_on_recompile_limit_hit = True
    torch.manual_seed(0)
    model = Model()
    if args.backend == "inspect":
        args.backend = inspect_backend
    dyn = {"auto": None, "off": False, "on": True}[args.dynamic]
    if args.compile_inner:
        ddp = DDP(torch.compile(model, backend=args.backend, fullgraph=bool(args.fullgraph), dynamic=dyn))
        cm = ddp
    else:
        ddp = DDP(model)
        cm = torch.compile(ddp, backend=args.backend, fullgraph=bool(args.fullgraph), dynamic=dyn)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank); rnd = random.Random(rank)
    W = torch.randn(16, 4, generator=torch.Generator().manual_seed(3))
    print(f"[rank{rank}] compiled model with backend={getattr(args.backend, '__name__', args.backend)} fullgraph={bool(args.fullgraph)} world={world}", flush=True)
    for step in range(args.steps):
        t0 = time.time()
        x = torch.randn(32, 16, generator=g); y = (x @ W).argmax(1)
        if args.fault == "varlen":
            keep = (x[:, 0] > -1.0 + 0.1 * step)   # quality filter drops rows: batch size varies step to step
            x, y = x[keep], y[keep]
        if args.fault == "mixup-float":
            lam = round(rnd.betavariate(0.4, 0.4), 3)
            perm = torch.randperm(32, generator=g)
            logits = cm(x, lam, x[perm])
            loss = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
        else:
            logits = cm(x)
            loss = F.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f} ({time.time() - t0:.2f}s)", flush=True)
    dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

if __name__ == "__main__":
    main()
