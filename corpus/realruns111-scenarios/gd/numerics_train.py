"""Small tabular/sequence training loop with selectable numerical faults.

Runs as a single process (plain python), under torchrun / torch.distributed.run
(env RANK set), or via torch.multiprocessing.spawn (--spawn N).

--fault selects the bug, --fault-rank / --fault-step where it happens.
--fmt selects the metrics line style (hf | megatron | tqdm | plain | logging).
"""
import argparse
import csv
import logging
import math
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=12)
p.add_argument("--fmt", default="plain")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--optim", default="sgd")
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=44210)
p.add_argument("--data", default="data/train.csv")
p.add_argument("--stop-on-nan", action="store_true")
p.add_argument("--amp", default="none")  # none | fp16 | scaler | ownscaler
p.add_argument("--init-scale", type=float, default=65536.0)
p.add_argument("--min-scale", type=float, default=1.0)
p.add_argument("--temperature", type=float, default=1.0)
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--clip-error-if-nonfinite", action="store_true")
p.add_argument("--noise", type=float, default=0.3)
p.add_argument("--warmup", type=int, default=0)
p.add_argument("--sleep", type=float, default=0.02)
p.add_argument("--model", default="mlp")  # mlp | bn | attn | lm
p.add_argument("--anomaly", action="store_true")
p.add_argument("--decor", type=float, default=0.0)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--ddp", action="store_true")
args = p.parse_args()

N_FEAT = 8


def make_csv(path, n=2048, seed=0, inf_row=None, raw_rows=None):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(N_FEAT, generator=g)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow([f"f{i}" for i in range(N_FEAT)] + ["target"])
        for i in range(n):
            x = torch.randn(N_FEAT, generator=g)
            y = float(x @ w) + 0.1 * float(torch.randn(1, generator=g))
            row = [f"{v:.5f}" for v in x.tolist()] + [f"{y:.5f}"]
            if inf_row is not None and i == inf_row:
                # a sensor value written as 1e400 by an upstream exporter
                row[3] = "1e400"
            wr.writerow(row)


def load_csv(path):
    rows = []
    with open(path) as f:
        rd = csv.reader(f)
        next(rd)
        for r in rd:
            rows.append([float(v) for v in r])
    t = torch.tensor(rows)
    return t[:, :N_FEAT], t[:, N_FEAT]


class MLP(nn.Module):
    def __init__(self, d=N_FEAT, h=64, out=1, bn=False):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.bn = nn.BatchNorm1d(h) if bn else nn.Identity()
        self.fc2 = nn.Linear(h, h)
        self.head = nn.Linear(h, out)

    def forward(self, x):
        x = F.gelu(self.bn(self.fc1(x)))
        x = F.gelu(self.fc2(x))
        return self.head(x).squeeze(-1)


class TinyAttnLM(nn.Module):
    def __init__(self, vocab=32, d=32, T=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(T, d))
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, idx, pad_mask=None):
        B, T = idx.shape
        x = self.emb(idx) + self.pos[:T]
        att = self.q(x) @ self.k(x).transpose(1, 2) / math.sqrt(x.size(-1))
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        att = att.masked_fill(causal, -1e9)
        att = att.softmax(-1)
        return self.out(att @ self.v(x))


def fmt_line(rank, world, step, total, loss, gnorm, lr, epoch, extra=""):
    if args.fmt == "hf":
        d = {"loss": round(loss, 4) if math.isfinite(loss) else loss,
             "grad_norm": gnorm, "learning_rate": lr, "epoch": round(epoch, 2)}
        return str(d)
    if args.fmt == "megatron":
        return (f" iteration {step:8d}/{total:8d} | consumed samples: {step*args.batch_size*world:10d} |"
                f" elapsed time per iteration (ms): {1000*args.sleep+7.3:.1f} | learning rate: {lr:.3E} |"
                f" global batch size: {args.batch_size*world:5d} | lm loss: {loss:.6E} |{extra}"
                f" grad norm: {gnorm:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
    if args.fmt == "tqdm":
        return f"Epoch 0: {step}/{total} loss={loss:.4g}, grad_norm={gnorm:.3g}, lr={lr:.2e}{extra}"
    return f"step {step} loss {loss:.6f} grad_norm {gnorm:.4f} lr {lr:.5f}{extra}"


def main(rank, world, distributed):
    log = logging.getLogger("train")
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    torch.manual_seed(1234)
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))

    def out(msg):
        if args.fmt == "logging":
            log.info(msg)
        else:
            print(msg, flush=True)

    # ----- data -----
    if args.model in ("mlp", "bn"):
        if rank == 0 and not os.path.exists(args.data):
            inf_row = None
            if args.fault == "infsample":
                # row that lands in fault-rank's shard at fault-step
                inf_row = (args.fault_step * world + args.fault_rank) * args.batch_size + 5
            make_csv(args.data, inf_row=inf_row)
        if distributed:
            dist.barrier()
        X, Y = load_csv(args.data)
        mu, sd = X.mean(0), X.std(0)
        X = (X - mu) / sd if args.fault != "infsample" else X  # normalisation
        if args.fault == "fp16raw" and rank == args.fault_rank:
            # this shard is read from the raw export (physical units, not standardised)
            X = X * 3000.0 + 12000.0
        if args.fault == "scaler_overflow":
            X = X * 3000.0 + 12000.0
        out(f"[rank{rank}] loaded {len(X)} rows from {args.data}")
    else:
        g = torch.Generator().manual_seed(7)
        X = torch.randint(1, 32, (4096, 16), generator=g)
        Y = None

    bn = args.model == "bn"
    if args.model in ("mlp", "bn"):
        model = MLP(bn=bn)
    else:
        model = TinyAttnLM()
    if args.fault in ("maskfill", "fp16params"):
        model = model.half()  # "halve memory" on the host
    if distributed and args.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    params = [q for q in model.parameters()]
    if args.optim == "adam":
        opt = torch.optim.AdamW(params, lr=args.lr)
    else:
        opt = torch.optim.SGD(params, lr=args.lr, momentum=0.0)
    sched = None
    if args.warmup:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))
    if args.fault == "onecycle":
        steps_per_epoch = args.steps
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps_per_epoch)
    scaler = None
    if args.amp == "scaler" or args.fault == "fp16params":
        scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale)
    own_scale = args.init_scale
    good_steps = 0

    total = args.steps * args.epochs
    gstep = 0
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    for epoch in range(args.epochs):
        for step in range(args.steps):
            gstep += 1
            t0 = time.time()
            if args.model in ("mlp", "bn"):
                i0 = ((step * world) + rank) * args.batch_size
                bs = args.batch_size
                if args.fault == "lastbatch" and rank == args.fault_rank and step == args.fault_step:
                    bs = 1  # uneven shard: DistributedSampler(drop_last=False) leftover
                xb, yb = X[i0:i0 + bs], Y[i0:i0 + bs]
                if args.fault == "outlier" and rank == args.fault_rank and step == args.fault_step:
                    yb = yb * 1000.0  # this chunk exported in milli-units
                if args.fault == "dupbatch" and rank == args.fault_rank and step == args.fault_step:
                    xb = xb[:1].repeat(bs, 1)  # duplicated record filling the batch
                    yb = yb[:1].repeat(bs)
                ac = torch.autocast("cpu", dtype=torch.float16) if args.amp in ("fp16", "scaler", "ownscaler") \
                    else torch.autocast("cpu", enabled=False)
                with ac:
                    pred = model(xb.half() if args.fault == "fp16params" else xb)
                    if args.fault == "dupbatch" or args.fault == "batchstd":
                        # standardise targets per batch (scale-invariant loss)
                        yz = (yb - yb.mean()) / yb.std()
                        pz = (pred - pred.mean()) / pred.std()
                        loss = F.mse_loss(pz.float(), yz)
                    elif args.fault == "log0":
                        # hand-written BCE on "target > 0"
                        prob = torch.sigmoid(pred.float() * 8.0)
                        lab = (yb > 0).float()
                        loss = -(lab * torch.log(prob) + (1 - lab) * torch.log(1 - prob)).mean()
                    else:
                        loss = F.mse_loss(pred.float(), yb)
                    if args.decor > 0:
                        # whitening penalty on hidden features: log det of the batch covariance
                        m = model.module if hasattr(model, "module") else model
                        h = m.fc1(xb)
                        h = torch.cat([h, h[:, :4] * 2.0], 1)  # feature concat of a rescaled slice
                        c = (h - h.mean(0)).T @ (h - h.mean(0)) / (h.shape[0] - 1)
                        L = torch.linalg.cholesky(c)
                        loss = loss + args.decor * (-2 * torch.log(torch.diagonal(L)).sum())
            else:
                idx = X[(step * world + rank) * args.batch_size:((step * world + rank) + 1) * args.batch_size]
                mask = torch.ones_like(idx, dtype=torch.float)
                if args.fault == "zerocount" and rank == args.fault_rank and step == args.fault_step:
                    # batch of fully padded sequences (packing bug leaves empty docs)
                    mask = torch.zeros_like(mask)
                logits = model(idx[:, :-1] if args.fault != "fp16params" else idx[:, :-1])
                ce = F.cross_entropy(logits.float().reshape(-1, 32), idx[:, 1:].reshape(-1), reduction="none")
                loss = (ce * mask[:, 1:].reshape(-1)).sum() / mask[:, 1:].sum()

            opt.zero_grad(set_to_none=True)
            extra = ""
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                gn = torch.nn.utils.clip_grad_norm_(params, args.clip if args.clip else 1e9)
                scaler.step(opt)
                scaler.update()
                extra = f", scale={scaler.get_scale():.4g}" if args.fmt == "tqdm" else f" loss_scale {scaler.get_scale():.4g}"
            elif args.amp == "ownscaler":
                (loss * own_scale).backward()
                for q in params:
                    if q.grad is not None:
                        q.grad.div_(own_scale)
                    if distributed:
                        dist.all_reduce(q.grad)
                        q.grad.div_(world)
                gn = torch.nn.utils.clip_grad_norm_(params, 1e9)
                overflow = not math.isfinite(float(gn))
                if overflow:
                    if own_scale / 2 < args.min_scale:
                        raise Exception("Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
                    new = own_scale / 2
                    if rank == 0:
                        print(f"[deepspeed] OVERFLOW! Rank {rank} Skipping step. Attempted loss scale: {own_scale:g}, reducing to {new:g}", flush=True)
                    own_scale = new
                    good_steps = 0
                else:
                    opt.step()
                    good_steps += 1
                    if good_steps % 10 == 0:
                        own_scale *= 2
                extra = f" loss scale: {own_scale:.1f} |" if args.fmt == "megatron" else f" loss_scale {own_scale:g}"
            else:
                loss.backward()
                if distributed and not args.ddp:
                    for q in params:
                        dist.all_reduce(q.grad)
                        q.grad.div_(world)
                if args.clip and args.clip_error_if_nonfinite:
                    gn = torch.nn.utils.clip_grad_norm_(params, args.clip, error_if_nonfinite=True)
                else:
                    gn = torch.nn.utils.clip_grad_norm_(params, args.clip if args.clip else 1e12)
                opt.step()
            if sched is not None:
                sched.step()
            lv = float(loss)
            lr = opt.param_groups[0]["lr"]
            if rank == 0 or args.fault not in ("none",) or args.fmt == "logging":
                if rank == 0 or not math.isfinite(lv) or args.fmt != "megatron":
                    line = fmt_line(rank, world, gstep, total, lv, round(float(gn), 4), lr,
                                    epoch + step / args.steps, extra)
                    if world > 1 and args.fmt != "logging":
                        line = f"[rank{rank}] " + line
                    out(line)
            if args.stop_on_nan and not math.isfinite(lv):
                print(f"Loss is {lv}, stopping training", flush=True)
                sys.exit(1)
            time.sleep(args.sleep)

    if args.fault == "multinomial" or args.model == "lm":
        # sample a few tokens to eyeball the model
        m = model.module if hasattr(model, "module") else model
        ctx = torch.tensor([[1, 2, 3]])
        with torch.no_grad():
            for _ in range(8):
                logits = m(ctx)[:, -1, :].float()
                probs = F.softmax(logits / args.temperature, dim=-1)
                nxt = torch.multinomial(probs, num_samples=1)
                ctx = torch.cat([ctx, nxt], 1)
        out(f"[rank{rank}] sample: {ctx.tolist()}")

    out(f"[rank{rank}] training finished after {gstep} steps, final loss {lv:.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


def _spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world, True)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), True)
    else:
        main(0, 1, False)
