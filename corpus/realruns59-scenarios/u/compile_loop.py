"""torch.compile (inductor, CPU) inside a small DDP/single-process training loop.
--fault selects the problem."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--backend", default="inductor")
p.add_argument("--recompile-limit", type=int, default=None)
p.add_argument("--fail-on-limit", action="store_true")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--fault-rank", type=int, default=-1, help="only this rank gets unbucketed lengths (-1: all)")
args = p.parse_args()

class Block(nn.Module):
    def __init__(self, d=32, vocab=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, vocab)
    def forward(self, ids):
        h = self.emb(ids)
        h = h + self.ff(h)
        if args.fault == "graph_break":
            print(f"  debug: hidden mean {h.mean().item():.4f}")  # leftover debug print
        if args.fault == "data_dep":
            # skip the residual for "easy" batches (dynamic early exit)
            if h.norm() > 10.0:
                h = h + self.ff(h)
        return self.head(h)

def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    if args.recompile_limit is not None:
        torch._dynamo.config.recompile_limit = args.recompile_limit
    if args.fail_on_limit:
        torch._dynamo.config.fail_on_recompile_limit_hit = True
    torch.manual_seed(0)
    model = Block()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    cmodel = torch.compile(model, backend=args.backend, fullgraph=args.fullgraph,
                           dynamic=False if args.fault in ("recompile",) else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        t0 = time.time()
        # bucketed sequence lengths: every step a new length
        L = 8 + 4 * step if args.fault == "recompile" and args.fault_rank in (-1, rank) else 16
        ids = torch.randint(0, 64, (4, L), generator=g)
        logits = cmodel(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 64), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] step {step} seq_len {L} loss {loss.item():.4f} ({time.time()-t0:.2f}s)", flush=True)
    if world > 1:
        dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

if __name__ == "__main__":
    main()
