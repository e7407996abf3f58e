"""Token-bag classifier trained with configurable optimizer / grad-step options.

Launch forms: torchrun (env://), --spawn N (torch.multiprocessing.spawn), or plain
python (single process). --fault selects the bug, --fault-rank / --fault-step where
it applies.
"""
import argparse
import datetime
import logging
import math
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

log = logging.getLogger("train")


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=12)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--spawn", type=int, default=0, help="world size for mp.spawn")
    p.add_argument("--port", type=int, default=37620)
    p.add_argument("--global-batch", type=int, default=64)
    p.add_argument("--micro-batch", type=int, default=16)
    p.add_argument("--optim", default="adamw")
    p.add_argument("--fused", action="store_true")
    p.add_argument("--foreach", action="store_true")
    p.add_argument("--sparse-emb", action="store_true")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--anomaly", action="store_true")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--logfmt", action="store_true", help="python logging with timestamps")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--vocab", type=int, default=500)
    return p.parse_args()


class BagClassifier(nn.Module):
    def __init__(self, vocab, hidden, sparse):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, hidden, mode="mean", sparse=sparse)
        self.norm = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 4))
        self.temp = nn.Parameter(torch.ones(1))

    def forward(self, tokens, feats):
        h = self.norm(self.emb(tokens)) + feats
        return self.mlp(h) / self.temp


def make_batch(g, n, vocab, hidden, step, rank, args):
    tokens = torch.randint(0, vocab, (n, 12), generator=g)
    labels = tokens[:, 0] % 4
    feats = 0.1 * torch.randn(n, hidden, generator=g)
    if args.fault == "inf_feature" and rank == args.fault_rank and step == args.fault_step:
        # feature pipeline takes log of a count column; an all-zero row gives -inf
        counts = torch.randint(0, 5, (n, hidden), generator=g).float()
        counts[3] = 0.0
        feats = torch.log(counts)
    return tokens, feats, labels


def build_optimizer(args, model):
    core = model.module if hasattr(model, "module") else model
    kw = {}
    if args.fused:
        kw["fused"] = True
    if args.foreach:
        kw["foreach"] = True
    if args.fault == "dup_group":
        # separate (lower) LR for the embedding, but the first group still takes everything
        groups = [{"params": core.parameters(), "weight_decay": 0.01},
                  {"params": core.emb.parameters(), "lr": 1e-4}]
    elif args.fault == "dup_in_group":
        params = list(core.parameters()) + [core.temp]
        groups = [{"params": params}]
    else:
        groups = [{"params": core.parameters()}]
    if args.optim == "adamw":
        return torch.optim.AdamW(groups, lr=2e-3, weight_decay=0.01, **kw)
    if args.optim == "adam":
        return torch.optim.Adam(groups, lr=2e-3, **kw)
    if args.optim == "sgd":
        return torch.optim.SGD(groups, lr=0.05, momentum=0.9, weight_decay=1e-4, **kw)
    if args.optim == "adagrad":
        return torch.optim.Adagrad(groups, lr=0.05, **kw)
    raise SystemExit("unknown optimizer")


def out(rank, msg):
    if logging.getLogger().handlers:
        log.info(msg)
    else:
        print(msg, flush=True)


def worker(rank, world, args):
    if args.logfmt:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    if world > 1:
        if args.spawn:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(args.port))
            dist.init_process_group("gloo", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=40))
        else:
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
    torch.manual_seed(0)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    model = BagClassifier(args.vocab, args.hidden, args.sparse_emb)
    if args.fault == "freeze_all":
        # intended: freeze only the embedding for the first phase
        for name, p in model.named_parameters():
            if not name.startswith("temp"):
                p.requires_grad_(False)
        model.temp.requires_grad_(False)
    if args.fault == "freeze_emb_wd":
        model.emb.weight.requires_grad_(False)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    opt = build_optimizer(args, model)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))

    accum = args.global_batch // (args.micro_batch * world)
    if rank == 0:
        out(rank, f"world={world} global_batch={args.global_batch} micro_batch={args.micro_batch} "
                  f"grad_accum_steps={accum} optimizer={type(opt).__name__} params="
                  f"{sum(p.numel() for p in model.parameters())}")
    g = torch.Generator().manual_seed(100 + rank)
    loss_fn = nn.CrossEntropyLoss()
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=0.5)
    if args.fault == "sched_first":
        sched.step()  # "warm up" the lr before the first update
    t0 = time.time()
    micro = 0
    for step in it:
        tokens, feats, labels = make_batch(g, args.micro_batch, args.vocab, args.hidden, step, rank, args)
        if args.fault == "anomaly_sqrt":
            # distance-based regulariser; zero at identical rows
            logits = model(tokens, feats)
            d = (logits[:, :1] - logits[:, :1].detach().round()).pow(2).sum(1)
            if step == args.fault_step:
                d = d * 0.0
            loss = loss_fn(logits, labels) + 0.01 * d.sqrt().mean()
        else:
            loss = loss_fn(model(tokens, feats), labels)
        if args.fault == "accum_div":
            loss = loss / (args.micro_batch * world // args.global_batch)  # meant global/(micro*world)
            loss.backward()
        else:
            (loss / max(accum, 1)).backward() if args.fault != "accum_mod" else (loss / 1).backward()
        micro += 1
        if args.fault == "accum_mod":
            do_step = micro % accum == 0
        else:
            do_step = True
        if do_step:
            if args.clip > 0:
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip,
                                                    error_if_nonfinite=args.fault in ("inf_feature",))
            else:
                gn = torch.tensor(0.0)
            opt.step()
            if args.fault != "sched_first" or step > 0:
                sched.step()
            opt.zero_grad(set_to_none=True)
        if rank == 0 and (step + 1) % 5 == 0:
            msg = (f"step {step + 1}/{args.steps} loss={loss.item():.4f} grad_norm={float(gn):.3f} "
                   f"lr={sched.get_last_lr()[0]:.2e} {(time.time() - t0) / (step + 1) * 1000:.0f}ms/step")
            if args.tqdm:
                it.write(msg)
            else:
                out(rank, msg)
        if args.fault == "kill_self_wait" and rank == args.fault_rank and step == args.fault_step:
            with open(f"/work/rr86/db/tmp/pid_rank{rank}", "w") as f:
                f.write(str(os.getpid()))
            time.sleep(3)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    out(rank, f"rank {rank}: training finished in {time.time() - t0:.1f}s")


def main():
    args = get_args()
    if args.spawn:
        mp.spawn(worker, args=(args.spawn, args), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        worker(0, 1, args)


if __name__ == "__main__":
    main()
