"""Tiny GPT-style LM pretraining loop that prints Megatron-LM style iteration lines.

Launched with torchrun (gloo, CPU). Flags select the numerical problem:
  --fp16-mode none|static|dynamic   fp16 model + master fp32 weights with a loss scale
  --init-scale                      initial / static loss scale
  --min-scale                       minimum dynamic loss scale (error when reached)
  --lr, --clip-grad                 learning rate, gradient clipping (0 = off)
  --act-scale                       multiplies the embedding output (mimics an unnormalised
                                     residual stream: bigger activations in fp16)
  --bad-data-rank/--bad-data-step   a rank whose shard contains a corrupt (packed wrong) batch
  --nan-check                       Megatron-style check of the grad norm for NaN
"""
import argparse
import math
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--train-iters", type=int, default=200)
p.add_argument("--log-interval", type=int, default=10)
p.add_argument("--lr", type=float, default=6e-3)
p.add_argument("--min-lr", type=float, default=6e-4)
p.add_argument("--warmup", type=int, default=20)
p.add_argument("--clip-grad", type=float, default=1.0)
p.add_argument("--fp16-mode", default="none", choices=["none", "static", "dynamic"])
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
p.add_argument("--min-scale", type=float, default=1.0)
p.add_argument("--hysteresis", type=int, default=2)
p.add_argument("--act-scale", type=float, default=1.0)
p.add_argument("--logit-mult", type=float, default=1.0)
p.add_argument("--bad-data-rank", type=int, default=-1)
p.add_argument("--bad-data-step", type=int, default=-1)
p.add_argument("--nan-check", action="store_true")
p.add_argument("--pad-doc-rank", type=int, default=-1, help="rank whose shard has an all-padding sample window")
p.add_argument("--pad-doc-step", type=int, default=-1)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--micro-batch", type=int, default=8)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--seed", type=int, default=1234)
p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
args = p.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()


def print_rank_0(msg):
    if rank == 0:
        print(msg, flush=True)


print_rank_0("using world size: {}, data-parallel size: {}, tensor-model-parallel size: 1, "
             "pipeline-model-parallel size: 1".format(world, world))
print_rank_0("------------------------ arguments ------------------------")
for k, v in sorted(vars(args).items()):
    print_rank_0("  {} {} {}".format(k, "." * (40 - len(k)), v))
print_rank_0("-------------------- end of arguments ---------------------")
print_rank_0("> initializing torch distributed ...")
print_rank_0("> setting random seeds to {} ...".format(args.seed))
torch.manual_seed(args.seed)


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(h)
        self.attn = nn.MultiheadAttention(h, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(h)
        self.mlp = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h))

    def forward(self, x, mask):
        y = self.ln1(x)
        a, _ = self.attn(y, y, y, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, v, h, n=2, L=64):
        super().__init__()
        self.wte = nn.Embedding(v, h)
        self.wpe = nn.Embedding(L, h)
        self.blocks = nn.ModuleList([Block(h) for _ in range(n)])
        self.lnf = nn.LayerNorm(h)
        self.head = nn.Linear(h, v, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=self.wte.weight.dtype), 1)
        x = (self.wte(idx) + self.wpe(torch.arange(T))) * args.act_scale
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.lnf(x)) * args.logit_mult


print_rank_0("building GPT model ...")
model = GPT(args.vocab, args.hidden)
nparams = sum(p.numel() for p in model.parameters())
print_rank_0(" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {}".format(nparams))
for prm in model.parameters():
    dist.broadcast(prm.data, 0)

if args.fp16_mode != "none":
    master = [p.detach().clone().float().requires_grad_(True) for p in model.parameters()]
    model.half()
    print_rank_0("> using fp16 with {} loss scaling, initial scale {}".format(args.fp16_mode, args.init_scale))
else:
    master = list(model.parameters())
if args.optimizer == "adam":
    opt = torch.optim.Adam(master, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
else:
    opt = torch.optim.SGD(master, lr=args.lr, momentum=0.9)

g = torch.Generator().manual_seed(args.seed + rank)


def get_batch(it):
    # synthetic corpus: noisy repeating n-gram patterns so the LM can learn
    B, T = args.micro_batch, args.seq_len + 1
    start = torch.randint(0, args.vocab, (B, 1), generator=g)
    step = torch.randint(1, 7, (B, 1), generator=g)
    seq = (start + step * torch.arange(T)) % args.vocab
    noise = torch.rand(B, T, generator=g) < 0.1
    seq = torch.where(noise, torch.randint(0, args.vocab, (B, T), generator=g), seq)
    if rank == args.bad_data_rank and it >= args.bad_data_step >= 0:
        # shard written with a wrong dtype on this rank: tokens read as garbage
        seq = torch.randint(0, args.vocab, (B, T), generator=g)
        seq[:, 1::2] = seq[:, 0:1]
    mask = torch.ones(B, T - 1)
    if rank == args.pad_doc_rank and it == args.pad_doc_step:
        mask.zero_()  # window fell entirely inside the padding at the end of the shard (EOD/pad tokens)
    return seq[:, :-1], seq[:, 1:], mask


def lr_at(it):
    if it < args.warmup:
        return args.lr * (it + 1) / args.warmup
    r = (it - args.warmup) / max(1, args.train_iters - args.warmup)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * r))


scale = args.init_scale
growth_tracker = 0
hyst = args.hysteresis
skipped = 0
nan_iters = 0
acc_loss = 0.0
acc_n = 0
t0 = time.time()
print_rank_0("[after model, optimizer, and learning rate scheduler are built] datetime: {}".format(
    time.strftime("%Y-%m-%d %H:%M:%S")))
print_rank_0("training ...")
for it in range(1, args.train_iters + 1):
    for gp in opt.param_groups:
        gp["lr"] = lr_at(it)
    x, y, loss_mask = get_batch(it)
    logits = model(x)
    losses = F.cross_entropy(logits.float().view(-1, args.vocab), y.reshape(-1), reduction="none")
    loss = torch.sum(losses * loss_mask.view(-1)) / loss_mask.sum()
    model.zero_grad(set_to_none=True)
    if args.fp16_mode != "none":
        (loss.float() * scale).backward()
    else:
        loss.backward()
    if args.nan_check:
        local = torch.norm(torch.stack([q.grad.float().norm(2) for q in model.parameters() if q.grad is not None]))
        if not torch.isfinite(local):
            raise RuntimeError(
                "Rank {}: found NaN in local grad norm in backward pass before data-parallel communication "
                "collective. Device: cpu, node: {}".format(rank, os.uname().nodename))
    # data parallel all-reduce of grads
    for prm in model.parameters():
        if prm.grad is not None:
            dist.all_reduce(prm.grad, op=dist.ReduceOp.SUM)
            prm.grad.div_(world)
    skip = False
    if args.fp16_mode != "none":
        for m, prm in zip(master, model.parameters()):
            m.grad = prm.grad.float() / scale if prm.grad is not None else None
        found_inf = torch.tensor([0.0])
        for m in master:
            if m.grad is not None and not torch.isfinite(m.grad).all():
                found_inf[0] = 1.0
        dist.all_reduce(found_inf, op=dist.ReduceOp.MAX)
        if args.fp16_mode == "dynamic" and found_inf.item() > 0:
            skip = True
            skipped += 1
            hyst -= 1
            growth_tracker = 0
            if hyst <= 0:
                if scale <= args.min_scale:
                    raise Exception("Current loss scale already at minimum - cannot decrease scale anymore. "
                                    "Exiting run.")
                scale = max(scale / 2.0, args.min_scale)
                print_rank_0(" [Rank {}] Overflow detected. Skipping step. Attempted loss scale: {}, "
                             "reducing to {}".format(rank, scale * 2, scale))
        elif args.fp16_mode == "dynamic":
            hyst = args.hysteresis
            growth_tracker += 1
            if growth_tracker == 1000:
                scale *= 2.0
                growth_tracker = 0
        params_for_norm = master
    else:
        params_for_norm = list(model.parameters())
    grads = [q.grad for q in params_for_norm if q.grad is not None]
    gnorm = torch.norm(torch.stack([gr.norm(2) for gr in grads]), 2).item() if grads else 0.0
    if not skip:
        if args.clip_grad > 0:
            torch.nn.utils.clip_grad_norm_(params_for_norm, args.clip_grad)
        opt.step()
        if args.fp16_mode != "none":
            with torch.no_grad():
                for m, prm in zip(master, model.parameters()):
                    prm.copy_(m.half())
    lt = loss.detach().clone()
    dist.all_reduce(lt)
    lt /= world
    lv = lt.item()
    if math.isnan(lv) or math.isinf(lv):
        nan_iters += 1
    else:
        acc_loss += lv
        acc_n += 1
    if it % args.log_interval == 0:
        el = (time.time() - t0) * 1000 / args.log_interval
        t0 = time.time()
        s = " iteration {:8d}/{:8d} |".format(it, args.train_iters)
        s += " consumed samples: {:12d} |".format(it * args.micro_batch * world)
        s += " elapsed time per iteration (ms): {:.1f} |".format(el)
        s += " learning rate: {:.6E} |".format(lr_at(it))
        s += " global batch size: {:5d} |".format(args.micro_batch * world)
        avg = acc_loss / acc_n if acc_n else float("nan")
        s += " lm loss: {:.6E} |".format(avg)
        if args.fp16_mode != "none":
            s += " loss scale: {:.1f} |".format(scale)
        s += " grad norm: {:.3f} |".format(gnorm)
        s += " number of skipped iterations: {:3d} |".format(skipped)
        s += " number of nan iterations: {:3d} |".format(nan_iters)
        print_rank_0(s)
        acc_loss, acc_n, skipped, nan_iters = 0.0, 0, 0, 0
print_rank_0("[after training is done] datetime: {}".format(time.strftime("%Y-%m-%d %H:%M:%S")))
dist.barrier()
dist.destroy_process_group()
