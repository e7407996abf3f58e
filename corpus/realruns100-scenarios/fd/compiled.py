"""Tiny torch.compile training loop on CPU (optionally DDP/gloo); flags select the compile problem."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--backend", default="inductor")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fullgraph", type=int, default=0)
p.add_argument("--dynamic", default="auto")
p.add_argument("--rank", type=int, default=-1)
args = p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab=128, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        if args.fault == "data_dependent":
            # skip the FFN for all-padding batches
            if (ids != 0).sum() > 0:
                h = h + self.ff(h)
        elif args.fault == "graph_break_print":
            h = h + self.ff(h)
            if not hasattr(self, "_shown"):
                pass
            print(f"  [debug] hidden mean {h.mean().item():.4f}")
        else:
            h = h + self.ff(h)
        return self.out(h)


def my_profiling_backend(gm, example_inputs):
    # count ops in each captured graph and then hand over to inductor
    n_ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    print(f"[profiling_backend] graph with {n_ops} ops, {len(example_inputs)} inputs, first input shape {example_inputs[0].shape}")
    from torch._inductor import compile_fx
    return compile_fx.compile_fx(gm, example_inputs, mode="max-autotune")


def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    model = TinyLM()
    if "RANK" in os.environ:
        model = nn.parallel.DistributedDataParallel(model)
    backend = my_profiling_backend if args.backend == "profiling" else args.backend
    dyn = None if args.dynamic == "auto" else bool(int(args.dynamic))
    cmodel = torch.compile(model, backend=backend, fullgraph=bool(args.fullgraph), dynamic=dyn)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        if args.fault == "varlen":
            L = 8 + 3 * step          # pad-to-longest batches: sequence length differs every step
        else:
            L = 16
        ids = torch.randint(1, 128, (8, L), generator=g)
        t0 = time.time()
        logits = cmodel(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 128), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] step {step} seq_len {L} loss {loss.item():.4f} step_time {time.time()-t0:.2f}s", flush=True)
    print(f"[rank{rank}] done", flush=True)
    if "RANK" in os.environ:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
