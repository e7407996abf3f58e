"""fp16 mixed-precision training (torch.amp autocast + GradScaler) on a tiny attention model.

--fault selects the configuration mistake:
  none          healthy run (init_scale too large -> a few skipped steps at the start)
  norm_eps      feature-norm penalty computed in fp16: squares underflow -> sqrt(0) backward -> inf grads every step
  half_params   model.half() together with GradScaler
  mask_fill     attention mask filled with -1e9 inside autocast (fp16 scores)
Launch with torchrun (RANK set), torch.multiprocessing.spawn (--spawn N) or plain python.
"""
import argparse
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "norm_eps", "half_params", "mask_fill"])
p.add_argument("--steps", type=int, default=60)
p.add_argument("--every", type=int, default=5)
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
p.add_argument("--min-loss-scale", type=float, default=1e-4)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=47380)
p.add_argument("--fmt", default="fairseq", choices=["fairseq", "tqdm", "deepspeed"])
p.add_argument("--bad-rank", type=int, default=-1, help="only this rank uses the faulty setting (-1: all)")
args = p.parse_args()


class TinyAttn(nn.Module):
    def __init__(self, vocab=64, d=32, tiny_proj=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.aux = nn.Linear(d, d)
        if tiny_proj:
            nn.init.normal_(self.aux.weight, std=1e-5)  # "zero-ish" init of the auxiliary branch
            nn.init.zeros_(self.aux.bias)
        self.head = nn.Linear(d, vocab)
        self.legacy_mask = False

    def forward(self, ids, pad_mask):
        h = self.emb(ids)
        q, k, v = self.qkv(h).chunk(3, -1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        fill = -1e9 if self.legacy_mask else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(~pad_mask[:, None, :], fill)
        a = scores.softmax(-1) @ v
        h = h + self.proj(a)
        z = self.aux(h)
        return self.head(h), z


def worker(rank, world):
    if world > 1:
        if "RANK" not in os.environ:
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
            dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
        else:
            dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faulty = args.bad_rank < 0 or args.bad_rank == rank
    fault = args.fault if faulty else "none"
    torch.manual_seed(0)
    model = TinyAttn(tiny_proj=(fault == "norm_eps"))
    model.legacy_mask = fault == "mask_fill"
    if fault == "half_params":
        model = model.half()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale)
    g = torch.Generator().manual_seed(rank)
    skipped = 0
    it = range(1, args.steps + 1)
    bar = None
    if args.fmt == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=0)
        it = bar
    t0 = time.time()
    for step in it:
        ids = torch.randint(0, 64, (8, 16), generator=g)
        lens = torch.randint(8, 17, (8,), generator=g)
        pad_mask = torch.arange(16)[None, :] < lens[:, None]
        tgt = ids  # denoising-style copy target
        with torch.autocast("cpu", dtype=torch.float16):
            logits, z = model(ids, pad_mask)
            loss = F.cross_entropy(logits.reshape(-1, 64).float(), tgt.reshape(-1))
            # feature-norm penalty (keeps the auxiliary features small)
            if fault == "norm_eps":
                loss = loss + 0.01 * torch.sqrt((z ** 2).sum(-1)).mean()
            else:
                loss = loss + 0.01 * torch.sqrt((z.float() ** 2).sum(-1) + 1e-6).mean()
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        old = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        new = scaler.get_scale()
        overflow = new < old
        if overflow:
            skipped += 1
            if args.fmt == "deepspeed":
                print(f"[Rank {rank}] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank {rank} "
                      f"Skipping step. Attempted loss scale: {old}, reducing to {new}", flush=True)
            elif args.fmt == "fairseq":
                print(f"| WARNING: overflow detected, setting loss scale to: {new}", flush=True)
            if new < args.min_loss_scale:
                raise FloatingPointError(
                    "Minimum loss scale reached ({}). Your loss is probably exploding. "
                    "Try lowering the learning rate, using gradient clipping or "
                    "increasing the batch size.".format(args.min_loss_scale))
        if step % args.every == 0:
            msg = (f"epoch 001 | step {step:04d} | loss {loss.item():.3f} | gnorm {float(gn):.3f} | "
                   f"loss_scale {new:g} | skipped {skipped} | wall {time.time()-t0:.1f}")
            if bar is not None:
                bar.set_postfix(loss=f"{loss.item():.3f}", scale=f"{new:g}", skipped=skipped)
            elif args.fmt == "deepspeed":
                print(f"[Rank {rank}] steps: {step} loss: {loss.item():.4f} iter time (s): "
                      f"{(time.time()-t0)/step:.3f} samples/sec: {8*step/(time.time()-t0):.3f} loss_scale: {new:g}",
                      flush=True)
            elif rank == 0:
                print(msg, flush=True)
    if bar is not None:
        bar.close()
    if rank == 0:
        print(f"done: {args.steps} steps, {skipped} skipped", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        worker(0, 1)
