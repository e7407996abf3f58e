"""Tiny transformer LM (nn.TransformerEncoder, causal) trained with DDP on gloo.

Launch: torchrun / python -m torch.distributed.run (env vars), or --spawn N (torch.multiprocessing.spawn),
or plain python (single process, no DDP).
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "unused-param", "rank-config", "ddp-attr", "no-grad-eval", "leaf-inplace",
                        "resume-strict", "resume-weights-only", "resume-truncated", "resume-missing",
                        "resume-optim", "noisy"])
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=31140)
p.add_argument("--ckpt", default="/tmp/rr66as_tinytf/ckpt.pt")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--save-wrapped", action="store_true")
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        a = self.ln1(x)
        x = x + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, d=64, heads=4, layers=2, ctx=32, aux_head=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, ctx, d))
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        # auxiliary length-prediction head, only used when --aux-loss is on
        self.aux = nn.Linear(d, 1) if aux_head else None
        self.ctx = ctx

    def forward(self, idx):
        T = idx.size(1)
        x = self.tok(idx) + self.pos[:, :T]
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        for b in self.blocks:
            x = b(x, mask)
        return self.lm_head(self.ln_f(x))

    def num_params(self):
        return sum(p.numel() for p in self.parameters())


def main(rank, world):
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format=f"%(asctime)s %(levelname)s [%(process)d] rank={rank} %(message)s")
    log = logging.getLogger("tinygpt")

    def say(msg):
        if args.logfmt == "logging":
            log.info(msg)
        else:
            print(f"[rank {rank}] {msg}" if distributed else msg, flush=True)

    mine = args.fault_rank < 0 or args.fault_rank == rank

    cfg = dict(vocab=64, d=64, heads=4, layers=2, ctx=32)
    if args.fault == "unused-param":
        # head created, but its loss term is behind a flag that is off
        cfg["aux_head"] = True
    if args.fault == "rank-config" and mine:
        # this rank read a stale config file
        cfg["layers"] = 3
    model = TinyGPT(**cfg)
    say(f"model params: {model.num_params():,}")

    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    start = 0
    if args.fault.startswith("resume"):
        path = args.ckpt
        say(f"resuming from {path}")
        if args.fault == "resume-weights-only":
            ck = torch.load(path, map_location="cpu")
        else:
            ck = torch.load(path, map_location="cpu", weights_only=False)
        if args.fault == "resume-optim":
            opt = torch.optim.AdamW([{"params": [p for n, p in model.named_parameters() if "ln" not in n]},
                                     {"params": [p for n, p in model.named_parameters() if "ln" in n],
                                      "weight_decay": 0.0}], lr=3e-3, weight_decay=0.01)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"] + 1
        say(f"resumed at step {start}")

    if distributed:
        model = nn.parallel.DistributedDataParallel(model)

    if args.fault == "noisy":
        # healthy run, but with the usual noise
        t = torch.tensor([1.0, 2.0])
        # UserWarning: To copy construct from a tensor...
        _ = torch.tensor(t)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    g = torch.Generator().manual_seed(100 + rank)
    t0 = time.time()
    for step in range(start, start + args.steps):
        # synthetic "text": arithmetic sequences mod vocab so the model can learn something
        base = torch.randint(0, 64, (8, 1), generator=g)
        inc = torch.randint(1, 4, (8, 1), generator=g)
        seq = (base + inc * torch.arange(33)) % 64
        x, y = seq[:, :-1], seq[:, 1:]
        on = args.fault != "none" and mine and step >= args.fault_step
        if args.fault == "no-grad-eval" and on:
            # validation helper left the model in no_grad via a decorator-less context; training reuses it
            with torch.no_grad():
                logits = model(x)
        else:
            logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 64), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.fault == "ddp-attr" and on:
            # gradient clipping helper written for the unwrapped model
            model.lm_head.weight.grad.clamp_(-1, 1)
        if args.fault == "leaf-inplace" and on:
            # manual weight tying/normalisation done outside torch.no_grad()
            m = model.module if distributed else model
            m.tok.weight.div_(m.tok.weight.norm(dim=1, keepdim=True))
        if args.fault == "noisy" and step == start:
            # scheduler stepped first on the first iteration (warm-up bookkeeping bug, harmless)
            sched.step()
            opt.step()
        else:
            opt.step()
            sched.step()
        if step % 4 == 0:
            say(f"step {step:4d} | loss {loss.item():.4f} | lr {sched.get_last_lr()[0]:.2e} | "
                f"{(time.time() - t0) * 1000 / (step - start + 1):.0f} ms/it")
        if args.save_every and (step + 1) % args.save_every == 0 and rank == 0:
            os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
            m = model.module if distributed and not args.save_wrapped else model
            torch.save({"model": m.state_dict(), "optim": opt.state_dict(), "step": step,
                        "args": args}, args.ckpt)
            say(f"saved {args.ckpt}")
    say("training complete")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
