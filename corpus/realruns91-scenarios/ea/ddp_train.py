"""Small DDP text-classifier trainer (gloo, CPU).

Works under torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
--fault selects a bug; --rank / --step say where it triggers.
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
import torch.utils.checkpoint as ckpt
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with this many procs")
p.add_argument("--port", type=int, default=39650)
p.add_argument("--world-size", type=int, default=0, help="world size passed to init (default: --spawn)")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--log-ts", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--eval-file", default="/work/rr91/ea/data/eval_split.pt")
p.add_argument("--sleep", type=float, default=0.0, help="per-step sleep (simulated io)")
args = p.parse_args()

CORPUS = [
    "the model trains on small batches", "gradients are averaged across ranks",
    "loss goes down slowly", "the learning rate warms up", "checkpoint every epoch",
    "evaluation runs on rank zero", "data is sharded per rank", "tokens are lower case",
    "a tiny vocabulary for tests", "buckets are reduced in reverse order",
    "unused parameters need care", "the optimizer is plain sgd",
]


def build_vocab(lines):
    v = {"<pad>": 0, "<unk>": 1}
    for ln in lines:
        for w in ln.split():
            v.setdefault(w, len(v))
    return v


class Classifier(nn.Module):
    def __init__(self, vocab_size, dim=32, n_cls=3, aux=False):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab_size, dim)
        self.block1 = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.block2 = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.head = nn.Linear(dim, n_cls)
        self.aux_head = nn.Linear(dim, 1) if aux else None
        self.use_ckpt = False

    def forward(self, ids, use_aux=False):
        h = self.emb(ids)
        if self.use_ckpt:
            h = ckpt.checkpoint(self.block1, h, use_reentrant=True)
            h = ckpt.checkpoint(self.block2, h, use_reentrant=True)
        else:
            h = self.block2(self.block1(h))
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            out = out + self.aux_head(h)
        return out


def setup_log(rank):
    if args.log_ts:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s | %(levelname)-7s | rank {rank} | %(message)s")
    logging.captureWarnings(True)


def out(rank, msg):
    if args.log_ts:
        logging.getLogger("ddp_train").info(msg)
    else:
        print(f"[rank {rank}] {msg}", flush=True)


def worker(local_rank, world_from_spawn):
    if world_from_spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=local_rank, world_size=world_from_spawn,
                                timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    setup_log(rank)
    torch.manual_seed(1234)

    # each rank gets its own shard of the corpus
    shard = CORPUS[rank::world]
    if args.fault == "vocab_per_rank":
        vocab = build_vocab(shard)          # bug: vocab built from the local shard only
    else:
        vocab = build_vocab(CORPUS)
    out(rank, f"vocab size {len(vocab)}, shard {len(shard)} lines")

    model = Classifier(len(vocab), aux=args.fault in ("aux_all", "aux_rank", "none_unused"))
    if args.fault == "ckpt_reentrant":
        model.use_ckpt = True
    find_unused = args.find_unused
    ddp = DDP(model, find_unused_parameters=find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()

    ids_all = [[vocab.get(w, 1) for w in ln.split()] for ln in shard]
    L = max(len(x) for x in ids_all)
    ids = torch.tensor([x + [0] * (L - len(x)) for x in ids_all])
    labels = torch.tensor([i % 3 for i in range(len(shard))])

    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"train[r{rank}]", position=rank, mininterval=0, ncols=90)

    for step in it:
        if args.fault == "freeze_midway" and step == args.step:
            # schedule: freeze the embedding after warm-up (done after DDP wrapping)
            for prm in model.emb.parameters():
                prm.requires_grad_(False)
            out(rank, f"step {step}: froze embedding for fine-tuning phase")
        if args.fault == "eval_missing" and rank == 0 and step == args.step:
            out(rank, f"step {step}: running eval on {args.eval_file}")
            ev = torch.load(args.eval_file)
        use_aux = False
        if args.fault == "aux_rank":
            # aux loss only on batches that carry aux targets; this rank's batch at --step has none
            use_aux = not (rank == args.rank and step == args.step)
        if args.fault == "aux_all":
            use_aux = False
        logits = ddp(ids, use_aux=use_aux)
        loss = lossf(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.sleep:
            time.sleep(args.sleep)
        if args.tqdm:
            it.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 2 == 0 or args.log_ts:
            out(rank, f"step {step} loss {loss.item():.4f}")
    dist.barrier()
    out(rank, "finished training")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        nodes, per_node = 1, args.spawn
        world = args.world_size or nodes * per_node
        print(f"launching {per_node} local workers, world_size={world}", flush=True)
        mp.spawn(worker, args=(world,), nprocs=per_node, join=True)
    else:
        worker(int(os.environ.get("LOCAL_RANK", 0)), 0)
