"""DDP regression training with structured logging (python-json-logger / structlog / loguru / bracket format).

--fault selects a bug that is triggered on --fault-rank at --fault-step.
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--logfmt", default="pjl", choices=["pjl", "structlog", "loguru", "brackets"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--data-dir", default="data")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--in-features", type=int, default=16)
p.add_argument("--eval-rows", type=int, default=1024)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

# ---------------------------------------------------------------- logging
if args.logfmt == "pjl":
    from pythonjsonlogger.json import JsonFormatter

    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                 rename_fields={"levelname": "level", "asctime": "ts"},
                                 static_fields={"rank": rank, "service": "regress-train"}))
    logging.basicConfig(level=logging.INFO, handlers=[h])
    log = logging.getLogger("trainer")

    def info(msg, **kw):
        log.info(msg, extra=kw)

    def err(msg, **kw):
        log.exception(msg, extra=kw)
elif args.logfmt == "structlog":
    import structlog

    structlog.configure(processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.processors.dict_tracebacks,
        structlog.processors.JSONRenderer(),
    ])
    structlog.contextvars.bind_contextvars(rank=rank, world_size=world)
    slog = structlog.get_logger()

    def info(msg, **kw):
        slog.info(msg, **kw)

    def err(msg, **kw):
        slog.exception(msg, **kw)
elif args.logfmt == "loguru":
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, serialize=True, level="INFO")
    llog = logger.bind(rank=rank)

    def info(msg, **kw):
        llog.bind(**kw).info(msg)

    def err(msg, **kw):
        llog.bind(**kw).exception(msg)
else:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(module)s:%(lineno)d %(message)s")
    log = logging.getLogger("trainer")

    def info(msg, **kw):
        log.info("%s %s", msg, " ".join(f"{k}={v}" for k, v in kw.items()))

    def err(msg, **kw):
        log.exception("%s %s", msg, " ".join(f"{k}={v}" for k, v in kw.items()))


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.body(x))


def load_shard(r):
    path = os.path.join(args.data_dir, f"shard-{r:05d}.pt")
    obj = torch.load(path)
    return obj["x"], obj["y"]


def make_shards():
    os.makedirs(args.data_dir, exist_ok=True)
    for r in range(world):
        path = os.path.join(args.data_dir, f"shard-{r:05d}.pt")
        if args.fault == "missing-shard" and r == args.fault_rank:
            continue
        if os.path.exists(path):
            continue
        g = torch.Generator().manual_seed(r)
        x = torch.randn(256, args.in_features, generator=g)
        y = x.sum(1, keepdim=True) * 0.3 + 0.1 * torch.randn(256, 1, generator=g)
        if args.fault == "const-target" and r == args.fault_rank:
            y = torch.full((256, 1), 2.0)  # a shard where the label column was filled with a constant
        torch.save({"x": x, "y": y}, path)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    info("process group initialised", backend="gloo", world_size=world, pid=os.getpid())
    if rank == 0:
        make_shards()
    dist.barrier()
    torch.manual_seed(0)
    model = DDP(Net(args.in_features))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    x, y = load_shard(rank)
    info("loaded shard", rows=int(x.shape[0]), features=int(x.shape[1]))
    # per-shard target normalisation
    y = (y - y.mean()) / y.std()
    warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
    metrics = {"loss": 0.0, "lr": 3e-3}
    bs = 32
    for step in range(args.steps):
        i = (step * bs) % x.shape[0]
        xb, yb = x[i:i + bs], y[i:i + bs]
        if args.fault == "extra-feature" and rank == args.fault_rank and step >= args.fault_step:
            # feature pipeline appends a "position" column for later batches
            xb = torch.cat([xb, torch.arange(xb.shape[0], dtype=xb.dtype)[:, None] / bs], dim=1)
        out = model(xb)
        loss = nn.functional.mse_loss(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        metrics["loss"] = loss.item()
        if args.fault == "metric-key" and step == args.fault_step and rank == args.fault_rank:
            metrics["val_loss"] = metrics["val/loss"]  # renamed key in eval refactor
        if args.fault == "const-target" and not torch.isfinite(loss):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step}; stopping (detect_nan=True)")
        info("train_step", step=step, loss=round(metrics["loss"], 5), grad_norm=round(
            float(sum(p.grad.norm() ** 2 for p in model.parameters()) ** 0.5), 4))
        time.sleep(0.15)
        if args.fault == "big-eval" and step == args.fault_step and rank == args.fault_rank:
            info("building eval feature cache", rows=args.eval_rows)
            cache = torch.empty(args.eval_rows, 4096, 4096)
            cache.zero_()
        if step % 5 == 4 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, f)
            info("checkpoint saved", path=path)
        dist.barrier()
    info("training finished", final_loss=metrics["loss"])
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        err("training failed", step=None)
        sys.exit(1)
