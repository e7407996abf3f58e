"""Tabular classifier (MLP) trained on synthetic sensor data, sharded per rank.

Runs single-process (plain python), under torchrun (env://), or via --spawn N (mp.spawn).
--fmt print|kv|json selects the logging style. --fault selects a real bug:
  none            healthy run
  spike_recover   healthy, one batch from a noisy file gives a loss spike that recovers
  shard_norm      per-file normalisation; one file on --fault-rank has a stuck sensor (std=0)
  logsmooth       hand-written label-smoothed CE with log(softmax()) and high lr
  warmup_nocap    linear warmup without min(1, .) cap: lr keeps growing
  high_lr         lr far too large for SGD + momentum, no clipping
  overfit         tiny train set, big model, no regularisation (val loss rises)
  reload_best     model rebuilt from best checkpoint mid-run, optimizer still bound to old params
"""
import argparse, json, logging, math, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=150)
p.add_argument("--fmt", default="print")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--batches", type=int, default=100)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--opt", default="sgd")
p.add_argument("--manual-allreduce", action="store_true")
p.add_argument("--task", default="cls")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=36061)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--workdir", default="/work/rr78/cc/tmp")
args = p.parse_args()

NFEAT, NCLS = 24, 6


def make_files(rank, world, nfiles=12, rows=400):
    """Simulates reading `nfiles` CSV files of raw sensor readings for this rank's shard."""
    g = np.random.RandomState(1234 + rank)
    Wtrue = np.random.RandomState(7).randn(NFEAT, NCLS)
    files = []
    for f in range(nfiles):
        raw = g.randn(rows, NFEAT) * (g.rand(NFEAT) * 40 + 5) + g.rand(NFEAT) * 100
        z = (raw - raw.mean(0)) / raw.std(0)
        y = (z @ Wtrue + 0.8 * g.randn(rows, NCLS)).argmax(1)
        if args.fault == "shard_norm" and rank == args.fault_rank and f == 7:
            raw[:, 5] = 42.0  # sensor 5 stuck at a constant value in this file
        if args.fault == "spike_recover" and rank == 0 and f == 5:
            y[:40] = g.randint(0, NCLS, 40)  # a badly labelled chunk
            raw[:40] *= 8.0
        files.append((raw, y))
    return files


def normalise(files):
    out = []
    for raw, y in files:
        # BUG (shard_norm): statistics computed per file rather than over the training set
        mu, sd = raw.mean(0), raw.std(0)
        x = (raw - mu) / sd
        out.append((torch.tensor(x, dtype=torch.float32), torch.tensor(y)))
    return out


class MLP(nn.Module):
    def __init__(self, hidden=128, depth=2):
        super().__init__()
        layers, d = [], NFEAT
        for _ in range(depth):
            layers += [nn.Linear(d, hidden), nn.ReLU()]
            d = hidden
        layers.append(nn.Linear(d, NCLS))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def smoothed_ce(logits, y, eps=0.1):
    probs = torch.softmax(logits, -1)
    t = torch.full_like(probs, eps / (NCLS - 1))
    t.scatter_(1, y[:, None], 1 - eps)
    return -(t * torch.log(probs)).sum(-1).mean()


def main(rank, world):
    torch.manual_seed(args.seed)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    torch.set_num_threads(1)
    os.makedirs(args.workdir, exist_ok=True)
    log = logging.getLogger("trainer")
    if args.fmt == "kv":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")

    def out(step, epoch, batch, **m):
        if args.fmt == "print":
            s = "  ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items())
            print(f"[rank {rank}] epoch {epoch} batch {batch:3d}/{args.batches} step {step:4d}  {s}", flush=True)
        elif args.fmt == "kv":
            log.info("step=%d epoch=%d " % (step, epoch) + " ".join(
                f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}" for k, v in m.items()))
        else:
            d = {"ts": round(time.time(), 3), "rank": rank, "epoch": epoch, "step": step}
            d.update({k: (float(v) if isinstance(v, float) else v) for k, v in m.items()})
            print(json.dumps(d), flush=True)

    files = normalise(make_files(rank, world))
    if args.fault == "overfit":
        files = files[:1]
        files = [(files[0][0][:64], files[0][1][:64])]
    X = torch.cat([f[0] for f in files]); Y = torch.cat([f[1] for f in files])
    vx, vy = normalise(make_files(rank + 100, world, nfiles=1))[0]
    model = MLP(hidden=512 if args.fault == "overfit" else 128, depth=3 if args.fault == "overfit" else 2)
    if args.task == "reg":
        # linear probe predicting a continuous score (sum of the class-logit targets)
        model = nn.Linear(NFEAT, 1)
        wreg = torch.randn(NFEAT, generator=torch.Generator().manual_seed(5))
        Yr = X @ wreg + 0.3 * torch.randn(len(X), generator=torch.Generator().manual_seed(6)); vyr = vx @ wreg
    if world > 1 and not args.manual_allreduce:
        model = nn.parallel.DistributedDataParallel(model)
    elif world > 1:
        for p_ in model.parameters():
            dist.broadcast(p_.data, 0)
    mom = 0.9
    if args.opt == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=mom)
    base_lr = args.lr
    warm = 50
    step = 0
    best = float("inf")
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(epoch * 17 + rank)
        if args.fault == "overfit":
            perm = torch.cat([torch.randperm(len(X), generator=g) for _ in range(args.batches * args.bs // len(X) + 1)])
        else:
            # files are read in order within an epoch (streaming), rows shuffled inside a file
            perm = torch.cat([torch.randperm(400, generator=g) + 400 * i for i in range(len(files))])
        model.train()
        for b in range(args.batches):
            idx = perm[(b * args.bs) % len(perm):(b * args.bs) % len(perm) + args.bs]
            x, y = X[idx], Y[idx]
            if args.fault == "warmup_nocap":
                lr = base_lr * (step + 1) / warm  # BUG: no min(1.0, ...)
            elif args.fault in ("none", "spike_recover", "reload_best", "overfit", "shard_norm"):
                lr = base_lr * min(1.0, (step + 1) / warm) * (0.5 * (1 + math.cos(math.pi * step / (args.epochs * args.batches))))
            else:
                lr = base_lr
            for gp in opt.param_groups:
                gp["lr"] = lr
            logits = model(x)
            if args.task == "reg":
                loss = F.mse_loss(logits.squeeze(-1), Yr[idx])
            elif args.fault == "logsmooth":
                loss = smoothed_ce(logits, y)
            else:
                loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            if world > 1 and args.manual_allreduce:
                for p_ in model.parameters():
                    dist.all_reduce(p_.grad)
                    p_.grad /= world
            gn = torch.sqrt(sum((p_.grad.detach() ** 2).sum() for p_ in model.parameters() if p_.grad is not None))
            opt.step()
            step += 1
            if step % args.log_every == 0 or b == args.batches - 1:
                acc = (logits.argmax(1) == y).float().mean().item() if args.task != "reg" else float("nan")
                out(step, epoch, b + 1, loss=loss.item(), acc=acc, lr=lr, grad_norm=gn.item())
        # validation
        model.eval()
        with torch.no_grad():
            if args.task == "reg":
                vl = F.mse_loss(model(vx).squeeze(-1), vyr).item(); va = float("nan")
            else:
                vl = F.cross_entropy(model(vx), vy).item()
                va = (model(vx).argmax(1) == vy).float().mean().item()
        if args.fmt == "print":
            print(f"[rank {rank}] ==> epoch {epoch} done: val_loss {vl:.4f} val_acc {va:.4f}", flush=True)
        elif args.fmt == "kv":
            log.info("eval epoch=%d val_loss=%.5g val_acc=%.4f", epoch, vl, va)
        else:
            print(json.dumps({"ts": round(time.time(), 3), "rank": rank, "epoch": epoch, "step": step, "val_loss": vl, "val_acc": va}), flush=True)
        if vl < best:
            best = vl
            if rank == 0:
                torch.save((model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model).state_dict(), f"{args.workdir}/best_{os.getpid()}.pt")
        if args.fault == "reload_best" and epoch == 0:
            if world > 1:
                dist.barrier()
            # "restart from best checkpoint" helper: rebuilds the model, forgets the optimizer
            src = f"{args.workdir}/best_{os.getpid()}.pt"
            if world > 1:
                obj = [src]; dist.broadcast_object_list(obj, src=0); src = obj[0]
            m2 = MLP()
            m2.load_state_dict(torch.load(src, map_location="cpu"))
            model = nn.parallel.DistributedDataParallel(m2) if world > 1 else m2
            if args.fmt == "kv":
                log.info("reloaded best checkpoint %s (val_loss=%.4f)", src, best)
            else:
                print(f"[rank {rank}] reloaded best checkpoint {src} (val_loss={best:.4f})", flush=True)
    if rank == 0:
        print("Training finished.", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
