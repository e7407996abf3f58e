"""Checkpointing MLP trainer that emits JSON-lines logs (structlog or python-json-logger)."""
import argparse, logging, os, sys, time
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--logger", default="structlog", choices=["structlog", "jsonlogger"])
p.add_argument("--fault", default="none", choices=["none", "dtype", "arch_change", "optim_groups"])
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--save-every", type=int, default=5)
p.add_argument("--dist", action="store_true")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--save-args", action="store_true")
args = p.parse_args()
rank = int(os.environ.get("RANK", 0))

if args.logger == "structlog":
    import structlog
    structlog.configure(processors=[structlog.processors.add_log_level,
                                    structlog.processors.TimeStamper(fmt="iso"),
                                    structlog.processors.dict_tracebacks,
                                    structlog.processors.JSONRenderer()],
                        logger_factory=structlog.PrintLoggerFactory(sys.stdout))
    log = structlog.get_logger().bind(rank=rank, run="mlp-ckpt")
    info = lambda msg, **kw: log.info(msg, **kw)
    exc = lambda msg, **kw: log.exception(msg, **kw)
else:
    from pythonjsonlogger import jsonlogger
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(jsonlogger.JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    l = logging.getLogger("trainer"); l.addHandler(h); l.setLevel(logging.INFO)
    info = lambda msg, **kw: l.info(msg, extra=dict(rank=rank, **kw))
    exc = lambda msg, **kw: l.exception(msg, extra=dict(rank=rank, **kw))

if args.dist:
    torch.distributed.init_process_group("gloo", timeout=timedelta(seconds=25))


def build(hidden):
    return nn.Sequential(nn.Linear(16, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))


def main():
    torch.manual_seed(0)
    model = build(args.hidden)
    groups = [{"params": [p for n, p in model.named_parameters() if n.endswith("weight")], "weight_decay": 0.01}]
    if args.fault == "optim_groups":
        groups.append({"params": [p for n, p in model.named_parameters() if n.endswith("bias")], "weight_decay": 0.0})
    else:
        groups[0]["params"] = list(model.parameters())
    opt = torch.optim.AdamW(groups, lr=1e-3)
    if args.dist:
        model = nn.parallel.DistributedDataParallel(model)
    start = 0
    if args.resume:
        info("resuming", path=args.resume)
        ck = torch.load(args.resume, map_location="cpu")
        (model.module if args.dist else model).load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        info("resumed", step=start)
    w_true = torch.linspace(-1, 1, 16, dtype=torch.float64)
    for step in range(start, start + args.steps):
        xn = np.random.randn(32, 16)                     # features come from the numpy pipeline (float64)
        x = torch.from_numpy(xn)
        if args.fault != "dtype" or (args.fault_rank >= 0 and rank != args.fault_rank):
            x = x.float()
        y = (x.double() @ w_true).unsqueeze(1).float()
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        info("train_step", step=step, loss=round(loss.item(), 5), lr=opt.param_groups[0]["lr"])
        if (step + 1) % args.save_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step+1:05d}.pt")
            torch.save({"model": (model.module if args.dist else model).state_dict(), "optim": opt.state_dict(),
                        "step": step + 1, **({"args": args} if args.save_args else {})}, path)
            info("checkpoint_saved", path=path, bytes=os.path.getsize(path))
    info("done", final_step=start + args.steps)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        exc("training_failed")
        raise
