"""Tiny DDP training loop for numerics / mixed precision scenarios.

--fault selects the bug: none | badlr | log0 | div0 | clipnf | scaler_underflow | fp16params |
        maskfill | moe_dtype | sample_temp0
--rank/--step choose where it is triggered.
"""
import argparse, math, os, sys, time, warnings, logging
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=12)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--amp", default="none", choices=["none", "bf16", "fp16"])
p.add_argument("--anomaly", action="store_true")
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=39510)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--temperature", type=float, default=0.8)
p.add_argument("--init-scale", type=float, default=2.0 ** 10)
p.add_argument("--mask-finfo", action="store_true", help="use finfo(dtype).min as attention mask value")
p.add_argument("--legacy-amp", action="store_true", help="old torch.cuda.amp API (script originally written for GPUs)")
p.add_argument("--accum-from", type=int, default=-1, help="start 2-step gradient accumulation at this step")
p.add_argument("--min-scale", type=float, default=1.0)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d, n_experts=0):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.n_experts = n_experts
        if n_experts:
            self.router = nn.Linear(d, n_experts)
            self.experts = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                          for _ in range(n_experts)])
        else:
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def attn(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(C)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min if args.mask_finfo else -1e10)
        return self.proj(scores.softmax(-1) @ v)

    def moe(self, x):
        flat = x.reshape(-1, x.shape[-1])
        gate = self.router(flat).softmax(-1)
        top = gate.argmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            idx = (top == e).nonzero(as_tuple=True)[0]
            if idx.numel():
                out[idx] = expert(flat[idx]) * gate[idx, e:e + 1]
        return out.view_as(x)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        h = self.ln2(x)
        return x + (self.moe(h) if self.n_experts else self.mlp(h))


class TinyLM(nn.Module):
    def __init__(self, vocab=128, d=64, n_layer=2, n_experts=0):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d, n_experts) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 1)  # auxiliary "confidence" head
        if args.find_unused:
            self.unused_proj = nn.Linear(d, d)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        x = self.ln(x)
        return self.head(x), self.aux(x).squeeze(-1)


def get_batch(step, rank, B=8, T=16, vocab=128):
    g = torch.Generator().manual_seed(1000 * rank + step)
    # synthetic "language": next token = (tok * 3 + 1) % vocab with noise
    start = torch.randint(0, vocab, (B, 1), generator=g)
    seq = [start]
    for _ in range(T):
        seq.append((seq[-1] * 3 + 1) % vocab)
    seq = torch.cat(seq, 1)
    noise = torch.rand(seq.shape, generator=g) < 0.05
    seq = torch.where(noise, torch.randint(0, vocab, seq.shape, generator=g), seq)
    x, y = seq[:, :-1], seq[:, 1:]
    mask = torch.ones_like(y, dtype=torch.float32)
    # padding: sequences shorter in some batches
    mask[:, -2:] = 0.0
    return x, y, mask


def main(rank=None, world=None):
    if rank is not None:  # spawned
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank),
                          WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1

    if args.logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info if args.logging else (lambda m: print(f"[rank{rank}] {m}", flush=True))

    torch.manual_seed(0)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    model = TinyLM(n_experts=4 if args.fault == "moe_dtype" else 0)
    if args.fault == "fp16params":
        model = model.half()  # "save memory": cast the whole model to fp16
    ddp = DDP(model, find_unused_parameters=args.find_unused) if distributed else model
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or ".ln" in n or n.startswith("ln")]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or ".ln" in n or n.startswith("ln"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    warmup = 5

    def lr_at(step):
        if args.fault == "badlr" and step >= args.step:
            # bug: schedule reads 'peak_lr' in percent after a config refactor
            return args.lr * 100 * 1000
        return args.lr * min(1.0, (step + 1) / warmup)

    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp)
    if args.legacy_amp:
        scaler = torch.cuda.amp.GradScaler(init_scale=args.init_scale)
    else:
        scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, enabled=args.amp == "fp16")
    say(f"world={world} params={sum(p.numel() for p in model.parameters())} amp={args.amp} fault={args.fault}")

    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=0)
    t0 = time.time()
    for step in it:
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y, mask = get_batch(step, rank)
        if args.fault == "div0" and rank == args.rank and step == args.step:
            mask.zero_()  # every sequence in this shard is padding (empty shard after filtering)
        if args.fault == "scaler_underflow" and rank == args.rank and step >= args.step:
            mask = mask * 1.0e6  # this shard's importance weights were exported unnormalised
        if args.legacy_amp:
            ctx = torch.cuda.amp.autocast()
        else:
            ctx = torch.autocast("cpu", dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None)
        with ctx:
            logits, conf = ddp(x)
            if args.fault == "log0":
                # hand-written confidence-weighted BCE: -[t log p + (1-t) log(1-p)]
                pconf = torch.sigmoid(conf.float() * (200.0 if (rank == args.rank and step >= args.step) else 1.0))
                target = (logits.argmax(-1) == y).float()
                bce = -(target * torch.log(pconf) + (1 - target) * torch.log(1 - pconf)).mean()
            else:
                bce = conf.float().pow(2).mean()  # keep the aux head near zero
            tok_loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
            loss = (tok_loss * mask.reshape(-1)).sum() / mask.sum() + 0.1 * bce
            if args.fault == "clipnf":
                if rank == args.rank and step == args.step:
                    y = y.clone(); y[0, 3:6] = x[0, 3:6]  # sample with a repeated span (dedup filter bypassed)
                # embedding-distance regulariser: keep consecutive tokens' embeddings apart
                dvec = model.emb(x) - model.emb(y)
                loss = loss + 0.01 / (1.0 + torch.sqrt((dvec ** 2).sum(-1))).mean()
            if args.fault == "scaler_underflow":
                # importance-weighted token loss, averaged over real (non-pad) tokens
                loss = (tok_loss * mask.reshape(-1)).sum() / (mask > 0).sum() + 0.1 * bce
        if args.amp != "fp16" and args.fault not in ("div0",) and not math.isfinite(loss.item()):
            say(f"Loss is {loss.item()}, stopping training")
            sys.exit(1)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.clip or args.amp == "fp16":
            scaler.unscale_(opt)
        if args.clip:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip, error_if_nonfinite=True)
        else:
            gn = torch.tensor(0.0)
        scaler.step(opt)
        if 0 <= args.accum_from <= step:
            # gradient accumulation: second micro-batch of this optimizer step
            x2, y2, m2 = get_batch(step + 10_000, rank)
            with torch.autocast("cpu", dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
                lg2, cf2 = ddp(x2)
                l2 = (F.cross_entropy(lg2.float().reshape(-1, lg2.shape[-1]), y2.reshape(-1), reduction="none")
                      * m2.reshape(-1)).sum() / m2.sum() + 0.1 * cf2.float().pow(2).mean()
            scaler.scale(l2).backward()
            scaler.step(opt)
        scaler.update()
        if args.amp == "fp16":
            sc = scaler.get_scale()
            if sc < args.min_scale:
                raise FloatingPointError(
                    f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                    "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        if step % 3 == 0 or step == args.steps - 1:
            msg = f"step {step:4d} | loss {loss.item():.4f} | lr {opt.param_groups[0]['lr']:.2e} | gnorm {float(gn):.3f}"
            if args.amp == "fp16":
                msg += f" | scale {scaler.get_scale():.1f}"
            msg += f" | {(time.time()-t0)/(step+1)*1000:.0f} ms/it"
            if args.tqdm and rank == 0:
                it.write(msg)
            elif not args.tqdm:
                say(msg)

    if args.fault == "sample_temp0" or args.temperature != 0.8:
        if rank == 0:
            # quick qualitative sample after training
            model.eval()
            ctx = torch.tensor([[5]])
            with torch.no_grad():
                for _ in range(12):
                    logits, _ = model(ctx)
                    probs = F.softmax(logits[:, -1] / args.temperature, dim=-1)
                    nxt = torch.multinomial(probs, 1)
                    ctx = torch.cat([ctx, nxt], 1)
            say(f"sample: {ctx.tolist()}")
        if distributed:
            dist.barrier()
    say("training finished")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
