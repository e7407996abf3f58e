"""Character-level RNN language model trained with torch.multiprocessing.spawn (gloo, CPU).

Rank 0 shows a tqdm bar with the metrics as postfix; other ranks print plain lines.  Flags:
  --cell rnn_relu|gru            recurrent cell
  --clip F                       gradient clipping (0 = off)
  --head linear|cosine --tau T   cosine-similarity head with temperature tau
  --loss ce|focal                focal loss written by hand as -(1-p)^g * log(p), p = softmax
  --noisy-rank R --noisy-step S  rank R reads a shard with shuffled (wrong) targets from step S
  --sample-every N --temperature T   sample text from the model on rank 0 every N steps
  --nan-check                    stop if the loss is not finite
  --fp16-scaler                  model.half() trained with torch.amp.GradScaler
  --attn-pool                    masked attention pooling computed in the model dtype
  --bias-init B                  initial bias of the input projection (before the ReLU)
"""
import argparse
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=45730)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--cell", default="gru")
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--head", default="linear")
p.add_argument("--tau", type=float, default=0.05)
p.add_argument("--loss", default="ce")
p.add_argument("--gamma", type=float, default=2.0)
p.add_argument("--noisy-rank", type=int, default=-1)
p.add_argument("--noisy-step", type=int, default=-1)
p.add_argument("--sample-every", type=int, default=0)
p.add_argument("--temperature", type=float, default=1.0)
p.add_argument("--nan-check", action="store_true")
p.add_argument("--fp16-scaler", action="store_true")
p.add_argument("--half", action="store_true", help="pure fp16 weights, no scaler")
p.add_argument("--attn-pool", action="store_true")
p.add_argument("--bias-init", type=float, default=0.0)
p.add_argument("--seq", type=int, default=48)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--optim", default="adam")
args = p.parse_args()

TEXT = ("the quick brown fox jumps over the lazy dog. pack my box with five dozen liquor jugs. "
        "how vexingly quick daft zebras jump! sphinx of black quartz, judge my vow. ") * 40
CHARS = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(CHARS)}
V = len(CHARS)
DATA = torch.tensor([STOI[c] for c in TEXT])


class CharLM(nn.Module):
    def __init__(self, h=128):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.inp = nn.Linear(32, h)
        nn.init.constant_(self.inp.bias, args.bias_init)
        if args.cell == "gru":
            self.rnn = nn.GRU(h, h, batch_first=True)
        else:
            self.rnn = nn.RNN(h, h, nonlinearity="relu", batch_first=True)
            nn.init.normal_(self.rnn.weight_hh_l0, std=1.2 / math.sqrt(h))
        self.attn = nn.Linear(h, 1) if args.attn_pool else None
        self.head = nn.Linear(h, V, bias=args.head == "linear")

    def forward(self, x, pad_mask=None):
        hdn = F.relu(self.inp(self.emb(x)))
        out, _ = self.rnn(hdn)
        if args.attn_pool:
            # summary vector over the valid positions, added to every step
            score = self.attn(out).squeeze(-1)
            score = score.masked_fill(pad_mask, -1e9)
            ctx = (torch.softmax(score, -1).unsqueeze(-1) * out).sum(1, keepdim=True)
            out = out + ctx
        if args.head == "cosine":
            return F.normalize(out, dim=-1) @ F.normalize(self.head.weight, dim=-1).t() / args.tau
        return self.head(out)


def focal(logits, y):
    p = torch.softmax(logits.float(), -1).gather(-1, y.unsqueeze(-1)).squeeze(-1)
    return (-(1 - p) ** args.gamma * torch.log(p)).mean()


def sample(model, n=60):
    idx = torch.tensor([[STOI["t"]]])
    with torch.no_grad():
        for _ in range(n):
            logits = model(idx)[:, -1, :].float() / args.temperature
            probs = torch.softmax(logits, -1)
            nxt = torch.multinomial(probs, 1)
            idx = torch.cat([idx, nxt], 1)
    return "".join(CHARS[i] for i in idx[0].tolist())


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = CharLM()
    if args.fp16_scaler or args.half:
        model = model.half()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = (torch.optim.Adam if args.optim == "adam" else torch.optim.SGD)(ddp.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cpu") if args.fp16_scaler else None
    g = torch.Generator().manual_seed(rank)
    bar = None
    if rank == 0:
        print("world_size={} cell={} head={} loss={} clip={} lr={}".format(world, args.cell, args.head, args.loss,
                                                                          args.clip, args.lr), flush=True)
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", mininterval=0.5, file=sys.stderr)
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(DATA) - args.seq - 1, (args.batch,), generator=g)
        x = torch.stack([DATA[i:i + args.seq] for i in ix])
        y = torch.stack([DATA[i + 1:i + args.seq + 1] for i in ix])
        if rank == args.noisy_rank and step >= args.noisy_step >= 0:
            y = y[torch.randperm(args.batch, generator=g)]
            y = (y + torch.randint(1, V, y.shape, generator=g)) % V
        lens = torch.randint(args.seq // 2, args.seq + 1, (args.batch,), generator=g)
        pad = torch.arange(args.seq)[None, :] >= lens[:, None]
        logits = ddp(x, pad)
        if args.loss == "focal":
            loss = focal(logits, y)
        else:
            loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        if args.clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip).item()
        else:
            gn = torch.norm(torch.stack([q.grad.float().norm() for q in ddp.parameters() if q.grad is not None])).item()
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        lv = loss.item()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss="%.4f" % lv, gnorm="%.3g" % gn, lr=args.lr)
        elif step % 50 == 0:
            print("[rank{}] step {} loss {:.4f} gnorm {:.3g}".format(rank, step, lv, gn), flush=True)
        if args.nan_check and not math.isfinite(lv):
            if bar is not None:
                bar.close()
            print("[rank{}] Non-finite loss {} at step {} (grad norm {}). Stopping training; "
                  "check the data and the learning rate.".format(rank, lv, step, gn), flush=True)
            sys.exit(1)
        if rank == 0 and args.sample_every and step % args.sample_every == 0:
            bar.write("step {} sample: {!r}".format(step, sample(model)))
    if bar is not None:
        bar.close()
        print("done: final loss {:.4f}".format(lv), flush=True)
    dist.barrier()
    del ddp
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs, join=True)
