"""Tiny next-token LM trained with DDP/gloo on CPU; flags select numeric/precision faults.

Launch with torchrun (env://), with --spawn N (torch.multiprocessing.spawn), or plain python (1 process).
"""
import argparse, logging, math, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

PAD = 0


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none",
                   choices=["none", "emptybatch", "shortdocs", "lr", "fp16-mask", "scaler-fp16", "sample", "head-dtype",
                            "unscale-twice", "scaler-noisy", "bf16-warn", "lbfgs-scaler", "sparse-emb", "fp8-comm", "bf16-spectral"])
    p.add_argument("--rank", type=int, default=1, help="rank that hits the fault (data-dependent faults)")
    p.add_argument("--step", type=int, default=5, help="step at which the fault's data appears")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--optim", default="adamw", choices=["adamw", "sgd"])
    p.add_argument("--amp", default="none", choices=["none", "bf16", "fp16"])
    p.add_argument("--norm-eps", type=float, default=1e-6)
    p.add_argument("--anomaly", action="store_true", help="torch.autograd.set_detect_anomaly(True)")
    p.add_argument("--anomaly-ctx", action="store_true", help="enter torch.autograd.detect_anomaly() for the run")
    p.add_argument("--min-scale", type=float, default=0.0, help="stop when the fp16 loss scale falls below this")
    p.add_argument("--spectral-reg", type=float, default=1e-3)
    p.add_argument("--clip", type=float, default=0.0)
    p.add_argument("--clip-strict", action="store_true", help="clip_grad_norm_(error_if_nonfinite=True)")
    p.add_argument("--nan-guard", action="store_true", help="stop when the loss is not finite")
    p.add_argument("--diverge-guard", type=float, default=0.0, help="stop when loss > factor * best")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--sample-every", type=int, default=0)
    p.add_argument("--log-style", dest="log", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=38690)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--vocab", type=int, default=96)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--bs", type=int, default=16)
    return p.parse_args()


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, eps, big_neg=False, sparse=False):
        super().__init__()
        self.big_neg = big_neg
        self.emb = nn.Embedding(vocab, dim, padding_idx=PAD, sparse=sparse)
        self.norm1 = RMSNorm(dim, eps)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = RMSNorm(dim, eps)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def attention(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        T = x.shape[1]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        neg = -1e9 if self.big_neg else torch.finfo(scores.dtype).min
        scores = scores.masked_fill(causal, neg)
        return self.proj(scores.softmax(-1) @ v)

    def body(self, idx):
        x = self.emb(idx)
        x = x + self.attention(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x

    def forward(self, idx):
        return self.head(self.body(idx))


def make_batch(args, rank, step, g):
    # synthetic "text": noisy arithmetic sequences over tokens 1..vocab-1 (no padding in normal data)
    start = torch.randint(1, args.vocab, (args.bs, 1), generator=g)
    stride = torch.randint(1, 4, (args.bs, 1), generator=g)
    seq = (start + stride * torch.arange(args.seq + 1)) % (args.vocab - 1) + 1
    noise = torch.rand(seq.shape, generator=g) < 0.05
    seq = torch.where(noise, torch.randint(1, args.vocab, seq.shape, generator=g), seq)
    if args.fault == "emptybatch" and rank == args.rank and step >= args.step:
        # this rank's shard ran out: the collate function pads the remaining slots with empty documents
        seq = torch.full_like(seq, PAD)
    if args.fault == "shortdocs" and rank == args.rank and step >= args.step:
        # short documents: right-padded to the sequence length
        lens = torch.randint(4, args.seq, (args.bs, 1), generator=g)
        seq = torch.where(torch.arange(args.seq + 1) < lens, seq, torch.full_like(seq, PAD))
    return seq[:, :-1], seq[:, 1:]


def masked_ce(logits, targets):
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), reduction="none")
    mask = (targets.reshape(-1) != PAD).float()
    return (ce * mask).sum() / mask.sum()          # mean over real tokens


def run(rank, world, args):
    if args.log == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")

    def say(msg, level="info"):
        if args.log == "logging":
            getattr(log, level)(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=world, timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    if args.anomaly_ctx:
        torch.autograd.detect_anomaly(check_nan=True).__enter__()

    model = TinyLM(args.vocab, args.dim, args.norm_eps, big_neg=args.fault == "fp16-mask",
                   sparse=args.fault == "sparse-emb")
    if args.fault == "scaler-fp16":
        model = model.half()          # "halve the memory": cast the whole model to fp16
    if args.fault == "bf16-spectral":
        model = model.to(torch.bfloat16)   # pure-bf16 training to halve memory
    ddp = DDP(model)
    if args.fault == "fp8-comm":
        # gradient compression: like torch's fp16_compress_hook, but 8-bit to halve traffic again
        def fp8_compress_hook(state, bucket):
            buf = bucket.buffer()
            comp = buf.to(torch.float8_e4m3fn)
            fut = dist.all_reduce(comp, async_op=True).get_future()

            def decompress(f):
                out = buf.copy_(f.value()[0].to(buf.dtype))
                return out.div_(world)
            return fut.then(decompress)
        ddp.register_comm_hook(None, fp8_compress_hook)
    if args.optim == "adamw":
        opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    if args.fault == "lbfgs-scaler":
        opt = torch.optim.LBFGS(ddp.parameters(), lr=0.5, max_iter=4, history_size=5)
    use_scaler = args.amp == "fp16" or args.fault in ("scaler-fp16", "unscale-twice", "scaler-noisy", "lbfgs-scaler")
    if args.fault == "bf16-warn":
        scaler = torch.cuda.amp.GradScaler()   # copied from a GPU recipe
    else:
        scaler = torch.amp.GradScaler("cpu", enabled=use_scaler,
                                      init_scale=2.0 ** 24 if args.fault == "scaler-noisy" else 2.0 ** 16)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp)
    say(f"world={world} params={sum(p.numel() for p in model.parameters())} amp={args.amp} "
        f"lr={args.lr} optim={args.optim} scaler={scaler.is_enabled()}")

    g = torch.Generator().manual_seed(1234 + rank)
    best = float("inf")
    it = range(args.steps)
    if args.log == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", disable=False, mininterval=0, file=sys.stderr)
    accum = 2 if args.fault == "unscale-twice" else 1
    gn = None
    for step in it:
        x, y = make_batch(args, rank, step, g)
        with torch.autocast("cpu", dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
            if args.fault == "head-dtype":
                feats = model.mlp(model.norm2(model.body(x)))   # projection head before the tied output layer
                logits = None
            else:
                logits = ddp(x)
        if args.fault == "head-dtype":
            # tie output projection to the embedding matrix, computed outside autocast
            logits = F.linear(feats, model.emb.weight)
        loss = masked_ce(logits, y)
        if args.fault == "bf16-spectral":
            # spectral-norm penalty on the projection matrices (keeps the largest singular value small)
            loss = loss + args.spectral_reg * sum(torch.linalg.svdvals(m.weight)[0]
                                                  for m in model.modules() if isinstance(m, nn.Linear))
        lv = loss.item()
        if args.nan_guard and not math.isfinite(lv):
            say(f"step {step}: loss is {lv}, stopping. Check data/learning rate.", "error")
            raise FloatingPointError(f"Non-finite loss at step {step} on rank {rank}: {lv}")
        scaler.scale(loss / accum).backward()
        if (step + 1) % accum == 0 or args.fault == "unscale-twice":
            if args.clip > 0:
                scaler.unscale_(opt)
                gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip,
                                                    error_if_nonfinite=args.clip_strict)
            else:
                gn = None
            if (step + 1) % accum == 0:
                old_scale = scaler.get_scale() if scaler.is_enabled() else None
                if isinstance(opt, torch.optim.LBFGS):
                    def closure():
                        opt.zero_grad()
                        with torch.autocast("cpu", dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
                            l = masked_ce(ddp(x), y)
                        scaler.scale(l).backward()
                        return l
                    scaler.step(opt, closure)
                else:
                    scaler.step(opt)
                scaler.update()
                if old_scale is not None and scaler.get_scale() < old_scale:
                    say(f"Gradient overflow. Skipping step, loss scaler {rank} reducing loss scale to "
                        f"{scaler.get_scale()}", "warning")
                    if args.min_scale and scaler.get_scale() < args.min_scale:
                        raise FloatingPointError(
                            f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                            "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
                opt.zero_grad(set_to_none=True)
        best = min(best, lv)
        msg = f"step {step:4d} loss {lv:.4f}" + (f" grad_norm {gn.item():.3f}" if gn is not None else "")
        if scaler.is_enabled():
            msg += f" scale {scaler.get_scale():.1f}"
        if args.log == "tqdm":
            it.set_postfix(loss=f"{lv:.4f}")
            if step % 5 == 0:
                it.write(f"[rank{rank}] {msg}", file=sys.stderr)
        else:
            say(msg)
        if args.diverge_guard and step > 10 and lv > args.diverge_guard * best:
            say(f"loss {lv:.3f} is more than {args.diverge_guard}x the best loss {best:.3f}; "
                f"training has diverged", "error")
            sys.exit(3)
        if args.sample_every and step > 0 and step % args.sample_every == 0 and rank == 0:
            with torch.no_grad():
                ctx = torch.randint(1, args.vocab, (1, 4), generator=g)
                for _ in range(8):
                    nxt = model(ctx)[:, -1, :] / args.temperature
                    probs = nxt.softmax(-1)
                    tok = torch.multinomial(probs, 1)
                    ctx = torch.cat([ctx, tok], 1)
            say(f"sample: {ctx[0].tolist()}")
        if args.sleep:
            time.sleep(args.sleep)
    dist.barrier()
    say(f"done: final loss {lv:.4f}")
    dist.destroy_process_group()


def main():
    args = get_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(run, args=(args.spawn, args), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        run(0, 1, args)


if __name__ == "__main__":
    main()
