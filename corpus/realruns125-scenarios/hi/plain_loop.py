"""Hand-written training loop (tiny classifier / char-LM) with several metric-line formats.

--fault selects a real bug / misconfiguration; --fault-rank / --fault-step where it applies.
Works as a single process, under torchrun (env RANK/WORLD_SIZE) or with --spawn N (mp.spawn).
"""
import argparse
import json
import logging
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=30)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--fmt", default="kv", choices=["kv", "json", "tqdm", "plain"])
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=46050)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--arch", default="mlp", choices=["mlp", "cosmlp", "rnn", "attn"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--init-scale", type=float, default=2.0 ** 16)
    p.add_argument("--guard", action="store_true", help="stop when the loss diverges")
    p.add_argument("--optim", default="adamw", choices=["adamw", "sgd"])
    p.add_argument("--summary", action="store_true", help="wandb-offline style run summary at the end")
    p.add_argument("--min-scale", type=float, default=0.0)
    p.add_argument("--epochs", type=int, default=1)
    return p.parse_args()


VOCAB = 48
SEQ = 16


class MLP(nn.Module):
    def __init__(self, d_in=32, h=128, n_cls=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, h), nn.GELU(), nn.Linear(h, h), nn.GELU(), nn.Linear(h, n_cls))

    def forward(self, x):
        return self.net(x)


class CosMLP(nn.Module):
    """MLP on an L2-normalised learned projection of the input (cosine features)."""
    def __init__(self, d_in=32, h=128, n_cls=10):
        super().__init__()
        self.proj = nn.Linear(d_in, h, bias=False)
        self.head = MLP(h, h, n_cls)

    def forward(self, x):
        z = self.proj(x).float()
        norm = (z * z).sum(-1, keepdim=True).sqrt()
        return self.head(z / norm.clamp_min(1e-6))


class TanhRNN(nn.Module):
    def __init__(self, h=96):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.rnn = nn.RNN(32, h, nonlinearity="tanh", batch_first=True)
        self.out = nn.Linear(h, VOCAB)

    def forward(self, x):
        y, _ = self.rnn(self.emb(x))
        return self.out(y)


class TinyAttn(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, VOCAB)
        self.register_buffer("causal", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

    def forward(self, x):
        h = self.emb(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        # classic "big negative number" masking
        att = att.masked_fill(~self.causal[: x.shape[1], : x.shape[1]], -1e9)
        h = h + self.proj(att.softmax(-1) @ v)
        return self.out(self.ln(h))


def make_cls_batch(g, bs=32, d=32):
    x = torch.randn(bs, d, generator=g)
    w = torch.linspace(-1, 1, d)
    y = ((x @ w).sign().long() + 1) * 4 + (x[:, 0] > 0).long()  # classes 0..9
    return x, y.clamp(0, 9)


def make_lm_batch(g, bs=16):
    # noisy periodic "text" so the model has something to learn
    start = torch.randint(0, VOCAB, (bs, 1), generator=g)
    step = torch.randint(1, 4, (bs, 1), generator=g)
    seq = (start + step * torch.arange(SEQ + 1)) % VOCAB
    noise = torch.rand(seq.shape, generator=g) < 0.1
    seq = torch.where(noise, torch.randint(0, VOCAB, seq.shape, generator=g), seq)
    return seq[:, :-1], seq[:, 1:]


def main_worker(rank_arg, args):
    if args.spawn:
        os.environ["RANK"] = str(rank_arg)
        os.environ["WORLD_SIZE"] = str(args.spawn)
        os.environ["LOCAL_RANK"] = str(rank_arg)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=40))

    log = logging.getLogger("train")
    if args.fmt == "kv":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    torch.manual_seed(args.seed)  # same init on every rank
    lm = args.arch in ("rnn", "attn")
    model = {"mlp": MLP, "cosmlp": CosMLP, "rnn": TanhRNN, "attn": TinyAttn}[args.arch]()
    if args.fault == "half-model":
        # "save memory": keep the weights in fp16 and use a GradScaler
        model = model.half()
    base = model
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)

    if args.optim == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total = args.steps
    if args.fault == "warmup-bug":
        # linear warmup that forgets to saturate at 1.0
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / args.warmup)
    elif args.fault == "onecycle":
        # steps_per_epoch computed from the global dataset size, not the per-rank shard
        steps_per_epoch = args.steps // 2
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=steps_per_epoch)
        total = args.steps * args.epochs
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / args.warmup) * max(0.1, 1 - s / max(1, args.steps)))

    use_amp = args.amp or args.fault in ("amp-overflow", "pad-rows", "half-model", "maskfill-fp16")
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, enabled=use_amp)
    g = torch.Generator().manual_seed(1000 + rank)

    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)

    bar = None
    if args.fmt == "tqdm":
        from tqdm import tqdm
        bar = tqdm(total=total, desc=f"rank{rank} train", position=rank, dynamic_ncols=False, ncols=110, mininterval=0, miniters=1)

    def emit(step, **m):
        if args.fmt == "kv":
            log.info(" ".join(f"{k}={v}" for k, v in m.items()) if step is None else
                     f"step={step} " + " ".join(f"{k}={v}" for k, v in m.items()))
        elif args.fmt == "json":
            d = {"ts": round(time.time(), 3), "rank": rank, "step": step}
            d.update(m)
            print(json.dumps(d), flush=True)
        elif args.fmt == "plain":
            print(f"[rank {rank}] step {step:>4d}/{total} | " + " | ".join(f"{k} {v}" for k, v in m.items()), flush=True)
        elif args.fmt == "tqdm":
            bar.set_postfix({k: v for k, v in m.items() if k in ("loss", "gnorm", "lr", "scale")}, refresh=False)

    if rank == 0:
        nparams = sum(p.numel() for p in base.parameters())
        msg = f"model={args.arch} params={nparams} world_size={world} lr={args.lr} steps={total} amp={use_amp} clip={args.clip}"
        if args.fmt == "kv":
            log.info(msg)
        else:
            print(msg, flush=True)

    ema = None
    history = {"train/loss": [], "train/grad_norm": [], "train/lr": []}
    bad_in_row = 0
    t0 = time.time()
    for step in range(1, total + 1):
        if lm:
            x, y = make_lm_batch(g)
        else:
            x, y = make_cls_batch(g)
        # ---- data-side faults -------------------------------------------------
        if args.fault == "bad-sample" and rank == args.fault_rank and step == args.fault_step:
            # a sample whose feature was parsed from the string "inf" in the source CSV
            x[3, 7] = float("inf")
        if args.fault == "amp-overflow" and step >= args.fault_step:
            # raw sensor feature is no longer normalised after the data source switched units
            x = x.clone()
            x[:, 0] = x[:, 0] * 3e5
        if args.fault == "pad-rows" and step >= args.fault_step:
            # collate pads short batches to a fixed size with all-zero rows
            x = x.clone(); x[-4:] = 0.0
        if args.fault == "half-model":
            x = x.half() if not lm else x

        mask = None
        if args.fault == "zero-tokens":
            # padding mask; on one rank a packed batch ends up being all padding
            mask = (torch.rand(y.shape, generator=g) > 0.2)
            if rank == args.fault_rank and step == args.fault_step:
                mask[:] = False

        with torch.autocast("cpu", dtype=torch.float16, enabled=use_amp and args.fault != "half-model"):
            fwd = model.module if (args.fault == "no-ddp-sync" and distributed) else model
            out = fwd(x)
            if lm:
                tok_loss = F.cross_entropy(out.float().reshape(-1, VOCAB), y.reshape(-1), reduction="none")
                if mask is not None:
                    m = mask.reshape(-1).float()
                    loss = (tok_loss * m).sum() / m.sum()
                else:
                    loss = tok_loss.mean()
            else:
                loss = F.cross_entropy(out.float(), y)

        if args.fault == "anomaly":
            # log-barrier penalty on the positive part of the logits; torch.where keeps the
            # forward finite but the backward of log at 0 gives 0 * inf = nan
            pos = out.float().clamp(min=0)
            if rank == args.fault_rank and step >= args.fault_step:
                pos = pos.clone(); pos[0, 0] = 0.0
            else:
                pos = pos + 1e-3
            barrier = torch.where(pos > 0, torch.log(pos), torch.zeros_like(pos)).mean()
            loss = loss - 1e-4 * barrier

        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        if args.clip > 0:
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        else:
            gnorm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
        scale_before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped = use_amp and scaler.get_scale() < scale_before
        if skipped and args.fmt == "kv":
            log.warning(f"step={step} gradient overflow (inf/nan in grads), optimizer step skipped, "
                        f"loss scale {scale_before:g} -> {scaler.get_scale():g}")
        sched.step()
        if use_amp and args.min_scale > 0 and scaler.get_scale() < args.min_scale:
            raise FloatingPointError(
                f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                "Try lowering the learning rate, using gradient clipping or increasing the batch size.")

        if args.fault == "no-ddp-sync" and distributed and step % 20 == 0:
            # consistency check between workers (same idea as fairseq's _check_grad_norms)
            pn = torch.stack([p.detach().double().norm() for p in base.parameters()]).sum().reshape(1)
            allv = [torch.zeros_like(pn) for _ in range(world)]
            dist.all_gather(allv, pn)
            vals = torch.cat(allv)
            if not torch.allclose(vals, vals[0].expand_as(vals), rtol=1e-6, atol=1e-8):
                pretty = "\n".join(f"rank {i:3d} = {v.item():.8f}" for i, v in enumerate(vals))
                raise FloatingPointError(
                    "Fatal error: parameters are inconsistent between workers at step "
                    f"{step}. Try --ddp-backend=legacy_ddp.\n"
                    + "-" * 80 + f"\n{pretty}\n" + "-" * 80)

        lval = loss.detach().float().item()
        if distributed:
            t = loss.detach().float().reshape(1).clone()
            dist.all_reduce(t)
            gl = t.item() / world
        else:
            gl = lval
        if args.guard:
            ema = gl if ema is None else 0.95 * ema + 0.05 * gl
            if step > 40 and gl > 2.0 * min_ema:
                bad_in_row += 1
            else:
                bad_in_row = 0
            if bad_in_row >= 15:
                raise RuntimeError(
                    f"loss {gl:.4f} has been above 2x the best running loss ({min_ema:.4f}) for {bad_in_row} "
                    f"consecutive steps (step {step}); stopping: training diverged")
            min_ema = ema if step <= 5 else min(min_ema, ema)

        history["train/loss"].append(gl)
        history["train/grad_norm"].append(float(gnorm))
        history["train/lr"].append(sched.get_last_lr()[0])
        if bar is not None:
            bar.update(1)
        if step % args.every == 0 or step == 1 or (args.fault in ("bad-sample", "zero-tokens") and abs(step - args.fault_step) <= 1):
            m = {"loss": f"{lval:.4f}", "gnorm": f"{float(gnorm):.3f}", "lr": f"{sched.get_last_lr()[0]:.2e}"}
            if distributed:
                m["avg_loss"] = f"{gl:.4f}"
            if use_amp:
                m["scale"] = f"{scaler.get_scale():g}"
                m["skipped"] = int(skipped)
            m["it_s"] = f"{step / (time.time() - t0):.1f}"
            emit(step, **m)

        if args.fault == "sample-temp0" and step % 40 == 0 and rank == 0:
            # qualitative check: sample a few tokens greedily ("temperature 0")
            temperature = 0.0 if step >= args.fault_step else 0.8
            with torch.no_grad():
                ctx = x[:1, :4]
                for _ in range(8):
                    logits = base(ctx)[:, -1, :] / temperature
                    probs = torch.softmax(logits, dim=-1)
                    nxt = torch.multinomial(probs, num_samples=1)
                    ctx = torch.cat([ctx, nxt], dim=1)
            print(f"[rank {rank}] sample @ step {step} (T={temperature}): {ctx[0].tolist()}", flush=True)

    if bar is not None:
        bar.close()
    if distributed:
        dist.barrier()
    if args.summary and rank == 0:
        blocks = " ▁▂▃▄▅▆▇█"
        def spark(v):
            v = v[:: max(1, len(v) // 40)]
            fin = [a for a in v if math.isfinite(a)]
            lo, hi = (min(fin), max(fin)) if fin else (0.0, 1.0)
            return "".join(blocks[1 + int(7 * (a - lo) / (hi - lo + 1e-12))] if math.isfinite(a) else " " for a in v)
        run_id = f"{int(t0) % 10**8:08x}"
        print("wandb:", flush=True)
        print("wandb: Run history:", flush=True)
        for k, v in history.items():
            print(f"wandb: {k:>16} {spark(v)}", flush=True)
        print("wandb:", flush=True)
        print("wandb: Run summary:", flush=True)
        for k, v in history.items():
            print(f"wandb: {k:>16} {v[-1]:.5g}", flush=True)
        print(f"wandb: {'train/global_step':>16} {total}", flush=True)
        print("wandb:", flush=True)
        print(f"wandb: You can sync this run to the cloud by running:", flush=True)
        print(f"wandb: wandb sync wandb/offline-run-{time.strftime('%Y%m%d_%H%M%S')}-{run_id}", flush=True)
    done = f"training finished: steps={total} final_loss={gl:.4f} time={time.time() - t0:.1f}s"
    if args.fmt == "kv":
        log.info(done)
    else:
        print(f"[rank {rank}] " + done, flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    a = get_args()
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(a,), nprocs=a.spawn, join=True)
    else:
        main_worker(0, a)
