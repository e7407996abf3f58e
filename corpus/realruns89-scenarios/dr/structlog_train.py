"""DDP MLP regression trainer that logs JSON lines via structlog (or python-json-logger)."""
import argparse, json, logging, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import structlog
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "missing_shard", "cfg_key", "fsize", "shape"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--data-dir", default="/work/rr89/dr/data/shards")
p.add_argument("--ckpt-dir", default="/work/rr89/dr/out/ckpt")
p.add_argument("--json-logger", default="structlog", choices=["structlog", "pjl"])
p.add_argument("--warn-storm", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

if args.json_logger == "structlog":
    structlog.configure(processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.dict_tracebacks,
        structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(sys.stdout))
    structlog.contextvars.bind_contextvars(rank=rank, world_size=world)
    log = structlog.get_logger("trainer")
    def info(ev, **kw): log.info(ev, **kw)
    def warn(ev, **kw): log.warning(ev, **kw)
    def exc(ev, **kw): log.exception(ev, **kw)
else:
    from pythonjsonlogger import jsonlogger
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(jsonlogger.JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    lg = logging.getLogger("trainer"); lg.addHandler(h); lg.setLevel(logging.INFO)
    logging.captureWarnings(True); logging.getLogger("py.warnings").addHandler(h)
    def info(ev, **kw): lg.info(ev, extra=dict(rank=rank, **kw))
    def warn(ev, **kw): lg.warning(ev, extra=dict(rank=rank, **kw))
    def exc(ev, **kw): lg.exception(ev, extra=dict(rank=rank, **kw))

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)

CONFIG = {"model": {"in_dim": 32, "hidden": 64, "out_dim": 1}, "optim": {"lr": 3e-3, "weight_decay": 0.01},
          "data": {"batch_size": 16}}
if args.fault == "cfg_key" and rank == args.fault_rank:
    # this rank was started from an older config layout (scheduler section renamed)
    CONFIG["optim"] = {"lr": 3e-3, "wd": 0.01}

def make_shards():
    os.makedirs(args.data_dir, exist_ok=True)
    for r in range(world):
        f = os.path.join(args.data_dir, f"train-{r:05d}-of-{world:05d}.npz")
        if args.fault == "missing_shard" and r == args.fault_rank:
            if os.path.exists(f): os.remove(f)
            continue
        if not os.path.exists(f):
            g = np.random.default_rng(r)
            x = g.standard_normal((256, 32)).astype("float32")
            np.savez(f, x=x, y=(x[:, :4].sum(1, keepdims=True)).astype("float32"))

if rank == 0:
    make_shards()
dist.barrier()

shard = os.path.join(args.data_dir, f"train-{rank:05d}-of-{world:05d}.npz")
info("loading shard", path=shard)
d = np.load(shard)
X, Y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
if args.fault == "shape" and rank == args.fault_rank:
    X = X[:, :31]  # feature column dropped by a stale preprocessing cache on this host

mc = CONFIG["model"]
model = DDP(nn.Sequential(nn.Linear(mc["in_dim"], mc["hidden"]), nn.GELU(), nn.Linear(mc["hidden"], mc["out_dim"])))
oc = CONFIG["optim"]
opt = torch.optim.AdamW(model.parameters(), lr=oc["lr"], weight_decay=oc["weight_decay"])
info("model ready", params=sum(p.numel() for p in model.parameters()), lr=oc["lr"])

bs = CONFIG["data"]["batch_size"]
for step in range(args.steps):
    t0 = time.time()
    i = (step * bs) % X.shape[0]
    xb, yb = X[i:i + bs], Y[i:i + bs]
    if args.warn_storm:
        warnings.warn("torch.cpu.amp.autocast(args...) is deprecated. Please use torch.amp.autocast('cpu', args...) instead.", FutureWarning)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(f"Detected call of `lr_scheduler.step()` before `optimizer.step()` (step {step})", UserWarning)
    out = model(xb)
    loss = nn.functional.mse_loss(out, yb)
    opt.zero_grad(); loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if args.warn_storm and step % 4 == 3:
        warn("grad norm clipped", grad_norm=round(float(gn), 4), max_norm=1.0, step=step)
    info("train", step=step, loss=round(loss.item(), 5), grad_norm=round(float(gn), 4), dt_ms=round((time.time() - t0) * 1e3, 2))
    if step == args.fault_step and args.fault == "fsize" and rank == args.fault_rank:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        big = {"model": model.module.state_dict(), "opt": opt.state_dict(),
               "replay_buffer": torch.randn(2_000_000)}
        path = os.path.join(args.ckpt_dir, f"step{step}.pt")
        info("saving checkpoint", path=path)
        with open(path + ".tmp", "wb") as fh:
            torch.save(big, fh)
        os.replace(path + ".tmp", path)
        info("checkpoint saved", path=path)

dist.barrier()
info("training finished", final_loss=round(loss.item(), 5))
dist.destroy_process_group()
