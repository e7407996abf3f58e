"""DDP training on a tiny MLP / toy LM with selectable faults.

Faults (--fault):
  none            healthy run
  model-diff      rank --rank builds the model with a different hidden size (config read from env)
  unused          a branch used only for some batches -> unused parameters without find_unused_parameters
  buffer-diff     a registered buffer whose length depends on the local vocab file (differs per rank)
  ckpt-reentrant  reentrant activation checkpointing + find_unused_parameters=True
  no-sync-raise   rank --rank hits a KeyError inside no_sync during grad accumulation
  attr            evaluation on rank 0 calls a custom method on the DDP wrapper
  init-twice      a helper re-initialises the process group
  skip-barrier    rank --rank skips the barrier before the eval all_reduce
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank that carries the fault")
p.add_argument("--step", type=int, default=3, help="step at which the fault fires")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--logfmt", action="store_true", help="use logging with timestamps")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

if args.logfmt:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
    old = logging.getLogRecordFactory()

    def factory(*a, **k):
        r = old(*a, **k)
        r.rank = os.environ.get("RANK", "?")
        return r
    logging.setLogRecordFactory(factory)
log = logging.getLogger("train")


def say(msg):
    if args.logfmt:
        log.info(msg)
    else:
        print(f"[rank{os.environ.get('RANK', '?')}] {msg}", flush=True)


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)
        self.ln = nn.LayerNorm(h)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class ToyLM(nn.Module):
    def __init__(self, vocab, h, n_layer=2, aux_head=False, vocab_buffer=None, ckpt=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList([Block(h) for _ in range(n_layer)])
        self.head = nn.Linear(h, vocab)
        self.aux = nn.Linear(h, 2) if aux_head else None
        self.ckpt = ckpt
        if vocab_buffer is not None:
            self.register_buffer("token_freq", vocab_buffer)

    def forward(self, ids, use_aux=False):
        x = self.emb(ids)
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=True) if self.ckpt else b(x)
        logits = self.head(x)
        if use_aux and self.aux is not None:
            return logits, self.aux(x.mean(1))
        return logits

    def perplexity(self, ids):
        with torch.no_grad():
            lg = self(ids[:, :-1])
            return torch.exp(F.cross_entropy(lg.reshape(-1, lg.size(-1)), ids[:, 1:].reshape(-1)))


def setup():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    return dist.get_rank(), dist.get_world_size()


def reinit_helper():
    # "utility" copied from another project that sets up distributed itself
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group(backend="gloo", init_method="env://",
                            timeout=timedelta(seconds=args.timeout))


def main():
    rank, world = setup()
    torch.manual_seed(0)
    vocab = 97
    hidden = args.hidden
    if args.fault == "model-diff" and rank == args.rank:
        # rank reads a stale config override left in its env
        hidden = int(os.environ.get("MODEL_HIDDEN_OVERRIDE", "96"))
    buf = None
    if args.fault == "buffer-diff":
        # token frequency table built from the local shard's vocabulary
        local_vocab = vocab if rank != args.rank else vocab + 3
        buf = torch.ones(local_vocab)
    model = ToyLM(vocab, hidden, aux_head=args.fault == "unused",
                  vocab_buffer=buf, ckpt=args.fault == "ckpt-reentrant")
    say(f"model params={sum(p.numel() for p in model.parameters())} hidden={hidden} world={world}")
    if args.fault == "init-twice":
        reinit_helper()
    ddp = DDP(model, find_unused_parameters=args.find_unused or args.fault == "ckpt-reentrant")
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", disable=rank != 0)
    accum = 2
    for step in it:
        batches = [{"input_ids": torch.randint(0, vocab, (8, 17), generator=g)} for _ in range(accum)]
        if args.fault == "no-sync-raise" and rank == args.rank and step == args.step:
            # collator on this rank dropped the key for a malformed record
            batches[0] = {"ids": batches[0]["input_ids"]}
        t0 = time.time()
        with ddp.no_sync():
            for b in batches[:-1]:
                ids = b["input_ids"]
                loss = F.cross_entropy(ddp(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1)) / accum
                loss.backward()
        ids = batches[-1]["input_ids"]
        use_aux = args.fault == "unused" and step % 2 == 0
        out = ddp(ids[:, :-1], use_aux=use_aux)
        if use_aux:
            logits, aux = out
            loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1)) + 0.1 * aux.pow(2).mean()
        else:
            loss = F.cross_entropy(out.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        (loss / accum).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        l = loss.detach().clone()
        dist.all_reduce(l)
        if rank == 0 and not args.tqdm:
            say(f"step {step} loss {l.item() / world:.4f} step_time {time.time() - t0:.3f}s")
        if step == args.steps // 2:
            # mid-training eval
            if args.fault == "skip-barrier" and rank == args.rank:
                pass  # this rank's eval loader is empty so it skips the sync point
            else:
                dist.barrier()
            ev = torch.randint(0, vocab, (4, 17), generator=g)
            if rank == 0:
                if args.fault == "attr":
                    ppl = ddp.perplexity(ev)
                else:
                    ppl = ddp.module.perplexity(ev)
            else:
                ppl = torch.tensor(0.0)
            ppl = ppl.reshape(1)
            dist.all_reduce(ppl)
            if rank == 0:
                say(f"eval ppl {ppl.item():.2f}")
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
