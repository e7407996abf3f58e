"""Megatron-LM style pretraining loop (tiny LM) printing 'iteration N/ M | lm loss: ... |' lines.

--fault none | bad-batch (inf embedding input on one rank -> local NaN grad-norm check) |
        pad-rows (all-zero rows -> NaN grads, scaler skips every step) | no-clip (grad norm explodes)
        | spike (one hard batch, recovers)
"""
import argparse
import math
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-iter", type=int, default=40)
p.add_argument("--train-iters", type=int, default=100)
p.add_argument("--log-interval", type=int, default=5)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--clip-grad", type=float, default=1.0)
p.add_argument("--fp16", action="store_true")
p.add_argument("--initial-loss-scale", type=float, default=2.0 ** 16)
p.add_argument("--check-for-nan-in-loss-and-grad", action="store_true")
args = p.parse_args()

V, T, D = 64, 24, 64


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.mix = nn.Linear(D, D, bias=False)   # "attention-free" token mixer
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V)

    def forward(self, tok, extra=None, pad_mask=None):
        h = self.emb(tok) + self.pos[: tok.shape[1]]
        if extra is not None:
            h = h + extra
        if pad_mask is not None:
            h = h * pad_mask.unsqueeze(-1)   # zero out padded positions
        z = self.mix(h).float()
        # RMS-style normalisation of the mixer output without eps
        z = z / (z * z).mean(-1, keepdim=True).sqrt().clamp_min(1e-6)
        h = h + z
        h = h + self.ff(self.ln(h))
        return self.head(self.ln(h))


def get_batch(g, bs=8):
    start = torch.randint(0, V, (bs, 1), generator=g)
    step = torch.randint(1, 5, (bs, 1), generator=g)
    s = (start + step * torch.arange(T + 1)) % V
    noise = torch.rand(s.shape, generator=g) < 0.15
    s = torch.where(noise, torch.randint(0, V, s.shape, generator=g), s)
    return s[:, :-1], s[:, 1:]


def main():
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if rank == 0:
        print("using world size: {}, data-parallel size: {}, tensor-model-parallel size: 1, pipeline-model-parallel size: 1".format(world, world), flush=True)
        print("> building GPT model ...", flush=True)
    torch.manual_seed(1234)
    model = TinyLM()
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        print(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n}", flush=True)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warm = 10
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / args.train_iters)))))
    scaler = torch.amp.GradScaler("cpu", enabled=args.fp16, init_scale=args.initial_loss_scale)
    g = torch.Generator().manual_seed(77 + rank)
    gbs = 8 * world
    skipped = 0
    nan_iters = 0
    t_last = time.time()
    loss_acc = 0.0
    n_acc = 0
    if rank == 0:
        print("[after model, optimizer, and learning rate scheduler are built] datetime: " + time.strftime("%Y-%m-%d %H:%M:%S"), flush=True)
        print("training ...", flush=True)
    for it in range(1, args.train_iters + 1):
        tok, lab = get_batch(g)
        extra = None
        if args.fault == "bad-batch" and rank == args.fault_rank and it == args.fault_iter:
            # a corrupt packed sample: its position-ids overflowed and the rotary cache lookup gives inf
            extra = torch.zeros(tok.shape[0], T, D)
            extra[2, 5, :] = float("inf")
        if args.fault == "spike" and it == args.fault_iter:
            lab = torch.randint(0, V, lab.shape, generator=g)  # a shuffled (garbage) shard
        pad_mask = torch.ones(tok.shape)
        if args.fault == "pad-rows" and it >= args.fault_iter:
            # the packer fills the tail of the micro-batch with empty documents (all padding)
            pad_mask[-2:] = 0.0
        with torch.autocast("cpu", dtype=torch.float16, enabled=args.fp16):
            out = ddp(tok, extra=extra, pad_mask=pad_mask)
            loss = F.cross_entropy(out.float().reshape(-1, V), lab.reshape(-1))
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        if args.clip_grad > 0:
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip_grad)
        else:
            gn = torch.nn.utils.get_total_norm([q.grad for q in ddp.parameters()])
        if args.check_for_nan_in_loss_and_grad:
            # Megatron checks the loss of this rank before reporting
            if not math.isfinite(loss.item()):
                raise RuntimeError(
                    f"Rank {rank}: found NaN in local forward loss calculation. "
                    f"Device: cpu, node: {socket.gethostname()}")
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        if args.fp16 and scaler.get_scale() < before:
            skipped += 1
        else:
            sched.step()
        if not math.isfinite(loss.item()):
            nan_iters += 1
        lt = loss.detach().reshape(1).clone()
        dist.all_reduce(lt)
        loss_acc += lt.item() / world
        n_acc += 1
        if it % args.log_interval == 0 and rank == 0:
            el = (time.time() - t_last) * 1000 / args.log_interval
            t_last = time.time()
            s = " iteration {:8d}/{:8d} |".format(it, args.train_iters)
            s += " consumed samples: {:12d} |".format(it * gbs)
            s += " elapsed time per iteration (ms): {:.1f} |".format(el)
            s += " learning rate: {:.6E} |".format(sched.get_last_lr()[0])
            s += " global batch size: {:5d} |".format(gbs)
            s += " lm loss: {:.6E} |".format(loss_acc / n_acc)
            if args.fp16:
                s += " loss scale: {:.1f} |".format(scaler.get_scale())
            s += " grad norm: {:.3f} |".format(float(gn))
            s += " number of skipped iterations: {:3d} |".format(skipped)
            s += " number of nan iterations: {:3d} |".format(nan_iters)
            print(s, flush=True)
            loss_acc, n_acc, skipped, nan_iters = 0.0, 0, 0, 0
    dist.barrier()
    if rank == 0:
        print("[after training is done] datetime: " + time.strftime("%Y-%m-%d %H:%M:%S"), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
