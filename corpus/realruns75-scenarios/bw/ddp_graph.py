"""DDP + gradient checkpointing + MoE routing scenarios on a tiny decoder LM (gloo, CPU).

--ckpt {none,reentrant,nonreentrant}  activation checkpointing of every block
--moe                                  replace the MLP with a top-1 routed mixture of experts
--find-unused / --static-graph         DDP constructor flags
--fault:
  none            healthy
  pad-batch       FAULT_RANK gets an all-padding packed batch at FAULT_STEP (all tokens route to one expert)
  frozen-emb      embeddings frozen (fine-tuning recipe) while block 0 is checkpointed with use_reentrant=True
  router-ema      router keeps an EMA of expert load for the aux loss without detaching it
  local-vocab     each rank builds its char vocabulary from its own shard
  load-stats      expert-load logging all_reduces torch.bincount(top1) (no minlength)
  cap-warmup      MoE capacity factor warms up per forward call (counter bumped inside forward)
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer, seed_all, TinyLM  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch-size", type=int, default=4)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--experts", type=int, default=4)
p.add_argument("--moe", action="store_true")
p.add_argument("--log-load-every", type=int, default=1, help="all_reduce + print expert load every N steps (0=off)")
p.add_argument("--ckpt", default="none")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--static-graph", action="store_true")
p.add_argument("--logfmt", default="print", choices=["print", "logging"])
p.add_argument("--spawn", type=int, default=0, help="launch N workers with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=35660)
args = p.parse_args()


class MoE(nn.Module):
    def __init__(self, d, n_exp, fault):
        super().__init__()
        self.router = nn.Linear(d, n_exp, bias=False)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)) for _ in range(n_exp)])
        self.n_exp = n_exp
        self.fault = fault
        self.load_ema = torch.full((n_exp,), 1.0 / n_exp)
        self.aux_loss = None
        self.last_top1 = None
        self.calls = 0

    def capacity(self, n_tokens):
        # capacity factor warm-up: 1.0 -> 2.0 over the first 40 forward calls
        cf = 1.0 + min(self.calls, 40) / 40.0
        return max(1, int(cf * n_tokens / self.n_exp))

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        probs = F.softmax(self.router(flat), dim=-1)
        gate, top1 = probs.max(dim=-1)
        self.last_top1 = top1.detach()
        if self.fault == "router-ema":
            self.load_ema = 0.9 * self.load_ema + 0.1 * probs.mean(0)
            self.aux_loss = self.n_exp * (self.load_ema * probs.mean(0)).sum()
        else:
            frac = F.one_hot(top1, self.n_exp).float().mean(0)
            self.aux_loss = self.n_exp * (frac * probs.mean(0)).sum()
        cap = self.capacity(flat.shape[0]) if self.fault == "cap-warmup" else None
        if self.fault == "cap-warmup":
            self.calls += 1
        out = torch.zeros_like(flat)
        for e in range(self.n_exp):
            idx = (top1 == e).nonzero(as_tuple=True)[0]
            if cap is not None:
                idx = idx[:cap]  # drop overflow tokens
            if idx.numel() == 0:
                continue
            out[idx] = self.experts[e](flat[idx]) * gate[idx, None]
        return out.reshape(B, T, C)


class CkptLM(TinyLM):
    def __init__(self, *a, ckpt="none", **kw):
        super().__init__(*a, **kw)
        self.ckpt = ckpt

    def forward(self, idx, attn_mask=None):
        x = self.tok_emb(idx)
        for b in self.blocks:
            if self.ckpt == "none" or not self.training:
                x = b(x)
            else:
                x = checkpoint(b, x, use_reentrant=(self.ckpt == "reentrant"))
        return self.lm_head(self.ln_f(x))


def main(local_rank=None, nprocs=None):
    if local_rank is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", timeout=timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "30"))))
    rank, world = dist.get_rank(), dist.get_world_size()
    seed_all(1234)
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("trainer").info
        warn = logging.getLogger("trainer").warning
    else:
        def log(msg):
            print(f"[rank{rank}] {msg}", flush=True)

        def warn(msg):
            print(f"[rank{rank}] WARNING {msg}", flush=True)

    T = args.seq_len
    docs_text = [CORPUS[i:i + 400] for i in range(0, len(CORPUS), 400)]
    if args.fault == "local-vocab":
        # a few documents carry numbers; they happen to land in one rank's shard
        docs_text[args.fault_rank] = docs_text[args.fault_rank][:300] + " in 1999 it cost 42 dollars. "
        shard_text = "".join(docs_text[rank::world])
        tok = CharTokenizer(shard_text)
    else:
        tok = CharTokenizer(CORPUS + " in 1999 it cost 42 dollars. ")
    ids = tok.encode("".join(docs_text[rank::world]))
    chunks = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)]
    batches = [torch.tensor(chunks[i:i + args.batch_size])
               for i in range(0, len(chunks) - args.batch_size + 1, args.batch_size)][: args.steps]
    if args.fault in ("pad-batch", "load-stats") and rank == args.fault_rank:
        # last packed buffer of the shard was padded out to full length
        batches[args.fault_step] = torch.full_like(batches[args.fault_step], tok.pad_id)

    mlp_factory = (lambda: MoE(64, args.experts, args.fault)) if args.moe else None
    model = CkptLM(tok.vocab_size, d=64, h=4, n_layer=2, ckpt=args.ckpt, mlp_factory=mlp_factory)
    if args.fault == "frozen-emb":
        model.tok_emb.weight.requires_grad_(False)  # shared with lm_head: freezes both
        log("froze token embeddings / lm_head (tied)")
    n_train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(f"vocab={tok.vocab_size} trainable params={n_train} moe={args.moe} ckpt={args.ckpt}")
    ddp = DDP(model, find_unused_parameters=args.find_unused, static_graph=args.static_graph)
    opt = torch.optim.AdamW([p for p in ddp.parameters() if p.requires_grad], lr=2e-3, weight_decay=0.1)

    moes = [m for m in model.modules() if isinstance(m, MoE)]
    t0 = time.time()
    for step, xb in enumerate(batches):
        inp, tgt = xb[:, :-1], xb[:, 1:]
        logits = ddp(inp)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
        aux = sum(m.aux_loss for m in moes) if moes else torch.zeros(())
        total = loss + 0.01 * aux
        for li, m in enumerate(moes):
            local = torch.bincount(m.last_top1, minlength=args.experts)
            for e in (local == 0).nonzero(as_tuple=True)[0].tolist():
                warn(f"layer {li} expert {e} received 0/{m.last_top1.numel()} tokens at step {step} "
                     f"(router collapse?) local load={local.tolist()}")
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()
        line = f"step {step:3d} | loss {loss.item():.4f} | aux {float(aux):.4f} | {1000 * (time.time() - t0):.0f} ms"
        if moes and args.log_load_every and step % args.log_load_every == 0:
            counts = torch.bincount(moes[0].last_top1) if args.fault == "load-stats" else \
                torch.bincount(moes[0].last_top1, minlength=args.experts)
            dist.all_reduce(counts)
            line += f" | expert_load {counts.tolist()}"
        log(line)
        t0 = time.time()
    dist.barrier()
    log("done, saving nothing (smoke run)")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
