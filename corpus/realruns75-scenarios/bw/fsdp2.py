"""FSDP2 (fully_shard) on a tiny tied-embedding LM, gloo on CPU.

--fault none         healthy (warnings from a CPU/gloo run are expected)
--fault tied-loss    chunked cross-entropy computed in the training loop against model.tok_emb.weight
                     (the tied output projection), i.e. a sharded parameter used outside any forward
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer, init_dist, seed_all, TinyLM  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--batch-size", type=int, default=4)
args = p.parse_args()

rank, world = init_dist(timeout=int(os.environ.get("PG_TIMEOUT", "30")))
seed_all(7)
tok = CharTokenizer(CORPUS)
ids = tok.encode(CORPUS)
T = args.seq_len
chunks = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][rank::world]
batches = [torch.tensor(chunks[i:i + args.batch_size]) for i in range(0, len(chunks) - args.batch_size + 1, args.batch_size)][: args.steps]


class Backbone(TinyLM):
    def hidden(self, idx):
        x = self.tok_emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x)


model = Backbone(tok.vocab_size, d=64, h=4, n_layer=2)
for blk in model.blocks:
    fully_shard(blk)
fully_shard(model)
print(f"[rank{rank}] fully_shard applied: {type(model).__name__} params are {type(next(model.parameters())).__name__}", flush=True)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)

for step, xb in enumerate(batches):
    t0 = time.time()
    inp, tgt = xb[:, :-1], xb[:, 1:]
    if args.fault == "tied-loss":
        # memory-saving loss: get hidden states, then project chunk by chunk with the tied embedding
        h = model.hidden(inp)
        losses = []
        for hc, tc in zip(h.split(8, dim=1), tgt.split(8, dim=1)):
            logits = hc @ model.tok_emb.weight.t()
            losses.append(F.cross_entropy(logits.reshape(-1, logits.size(-1)), tc.reshape(-1), reduction="sum"))
        loss = torch.stack(losses).sum() / tgt.numel()
    else:
        logits = model(inp)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    print(f"[rank{rank}] step {step} loss {loss.item():.4f} grad_norm {gn.full_tensor().item() if hasattr(gn, 'full_tensor') else gn.item():.3f} ({1000 * (time.time() - t0):.0f} ms)", flush=True)

dist.barrier()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
