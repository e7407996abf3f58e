"""Tiny DDP (gloo, CPU) trainer with injectable real faults.

Flags select the fault, the rank that hits it and the step.
"""
import argparse
import datetime
import json
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data-dir", default="")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--resume", default="")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--run-name", default="tiny")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--noisy", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--log-every", type=int, default=2)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.use_logging:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
    )
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)


class TokenDataset(Dataset):
    """Fixed-length token windows, from jsonl shard files or synthetic."""

    def __init__(self, n, seqlen, vocab, rows=None):
        self.rows = rows
        self.n = n if rows is None else len(rows)
        self.seqlen = seqlen
        self.vocab = vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.rows is not None:
            rec = json.loads(self.rows[i])
            ids = rec["ids"]
        else:
            g = torch.Generator().manual_seed(i)
            ids = torch.randint(0, self.vocab, (self.seqlen + 1,), generator=g).tolist()
        x = torch.tensor(ids[:-1], dtype=torch.long)
        y = torch.tensor(ids[1:], dtype=torch.long)
        return x, y


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=32, layers=2, aux_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.aux = nn.Linear(dim, 4) if aux_head else None

    def forward(self, x, use_aux=False):
        h = self.emb(x)
        for b in self.blocks:
            h = h + torch.tanh(b(h))
        h = self.norm(h)
        out = self.head(h)
        if use_aux and self.aux is not None:
            return out, self.aux(h.mean(1))
        return out


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    log(f"initialized process group: world_size={world} backend={dist.get_backend()}")

    vocab = args.vocab
    layers = 2
    if args.fault == "model_mismatch" and rank == args.fault_rank:
        # this node has a stale config file with 3 layers
        cfg = json.load(open(os.path.join(args.data_dir, "model_config.json")))
        layers = cfg["n_layer"]
    model = TinyLM(vocab, layers=layers, aux_head=args.fault == "unused_params")

    if args.resume:
        # every node reads its local copy of the checkpoint
        path = args.resume.replace("{rank}", str(rank))
        log(f"loading checkpoint {path}")
        sd = torch.load(path, map_location="cpu")
        model.load_state_dict(sd["model"])
        log("checkpoint loaded")

    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)

    seqlen = 16
    if args.data_dir and args.fault != "model_mismatch":
        shard = os.path.join(args.data_dir, f"shard-{rank:05d}.jsonl")
        log(f"reading {shard}")
        with open(shard) as f:
            rows = f.readlines()
        ds = TokenDataset(0, seqlen, vocab, rows=rows)
        sampler = None
    else:
        ds = TokenDataset(64 * world, seqlen, vocab)
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=8, sampler=sampler, shuffle=False,
                    num_workers=args.workers, drop_last=True,
                    persistent_workers=args.workers > 0)

    it = range(args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=80)

    step = 0
    data_iter = iter(dl)
    t0 = time.time()
    for step in it:
        try:
            x, y = next(data_iter)
        except StopIteration:
            data_iter = iter(dl)
            x, y = next(data_iter)

        if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
            # waits for a "ready" marker another job was supposed to write
            marker = os.path.join(args.ckpt_dir or "/tmp", "prefetch.ready")
            log(f"waiting for {marker}")
            while not os.path.exists(marker):
                time.sleep(1)

        if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
            import ctypes
            # custom fused op reading from a stale pointer
            ctypes.string_at(0xdead0000, 64)

        if args.fault == "eval_oom" and rank == args.fault_rank and step == args.fault_step:
            # quick eval: whole held-out split in one forward pass (no batching)
            g = torch.Generator().manual_seed(1)
            x_val = torch.randint(0, vocab, (400000, seqlen), generator=g)
            log(f"eval on {x_val.shape[0]} held-out windows")
            with torch.no_grad():
                val_logits = model(x_val)
            log(f"val ppl {torch.exp(F.cross_entropy(val_logits.reshape(-1, vocab), x_val.reshape(-1))).item():.2f}")

        if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
            # packing bug: the last window is reshaped with the wrong stride
            x = x.reshape(-1)[: x.numel() - 3].reshape(8, -1)

        use_aux = args.fault == "unused_params" and not (rank == args.fault_rank and step >= args.fault_step)
        if args.fault == "unused_params":
            out, aux = ddp(x, use_aux=use_aux) if use_aux else (ddp(x, use_aux=False), None)
        else:
            out = ddp(x)
            aux = None
        if args.noisy:
            # legacy loss call kept from the old codebase
            loss = F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1), reduce=True)
        else:
            loss = F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
        if aux is not None:
            loss = loss + 0.1 * aux.pow(2).mean()

        if args.fault == "collective_mismatch" and step == args.fault_step:
            # per-rank token counting; rank's tokenizer emits a different number of stats
            n_stats = 3 if rank == args.fault_rank else 4
            stats = torch.ones(n_stats)
            dist.all_reduce(stats)

        if not torch.isfinite(loss):
            raise FloatingPointError(f"non-finite loss {loss.item()} at step {step}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.step_sleep:
            time.sleep(args.step_sleep)  # stands in for real step time

        if args.fault == "monitored" and rank == args.fault_rank and step == args.fault_step:
            log("computing eval metrics on full validation split ...")
            time.sleep(args.pg_timeout * 3)

        if step % args.log_every == 0 or step == args.steps - 1:
            if args.fault == "monitored":
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
            lt = torch.tensor(loss.detach()) if args.noisy else loss.detach().clone()
            dist.all_reduce(lt)
            lt /= world
            if rank == 0:
                msg = f"step {step:4d} | loss {lt.item():.4f} | lr 3.00e-03 | {(time.time()-t0)/(step+1)*1000:.1f} ms/step"
                if args.progress:
                    it.write(msg)
                else:
                    log(msg)

        if args.save_every and (step + 1) % args.save_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"{args.run_name}-step{step+1}.pt")
            log(f"saving checkpoint to {path}")
            with open(path, "wb") as fh:
                torch.save({"model": model.state_dict(), "step": step + 1}, fh)
        if args.save_every and (step + 1) % args.save_every == 0:
            dist.barrier()

    dist.barrier()
    log(f"training finished after {step+1} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
