"""DDP trainer with checkpoint save / resume (gloo, CPU).

rank 0 writes the full checkpoint (model + optimizer) to --save-dir/ckpt-<step>.pt,
every rank writes its own small state to --save-dir/rank<r>/state-<step>.pt.
--resume DIR loads DIR/ckpt.pt on rank 0 (then DDP broadcasts) and DIR/rank<r>/state.pt per rank.
"""
import argparse
import dataclasses
import datetime
import io
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--save-dir", default="ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--param-groups", type=int, default=1)
p.add_argument("--store-config", action="store_true")
p.add_argument("--load-optim-on-all", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--run-name", default="")
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s | %(levelname)-7s | rank{rank} | %(message)s")
log = logging.getLogger("resume")
torch.manual_seed(0)
torch.set_num_threads(1)


@dataclasses.dataclass
class RunConfig:
    hidden: int
    lr: float
    steps: int


dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
cfg = RunConfig(args.hidden, 1e-3, args.steps)
model = nn.Sequential(nn.Linear(32, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden),
                      nn.ReLU(), nn.Linear(args.hidden, 4))
if args.param_groups == 1:
    groups = [{"params": list(model.parameters())}]
else:
    decay = [p_ for n, p_ in model.named_parameters() if n.endswith("weight")]
    nodecay = [p_ for n, p_ in model.named_parameters() if n.endswith("bias")]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}]
opt = torch.optim.AdamW(groups, lr=cfg.lr)
start = 0
if args.resume:
    if rank == 0:
        path = os.path.join(args.resume, "ckpt.pt")
        log.info(f"resuming from {path}")
        ck = torch.load(path, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        log.info(f"restored model/optimizer at step {start}")
    elif args.load_optim_on_all:
        ck = torch.load(os.path.join(args.resume, "ckpt.pt"), map_location="cpu")
        opt.load_state_dict(ck["optim"])
    spath = os.path.join(args.resume, f"rank{rank}", "state.pt")
    st = torch.load(spath)
    torch.set_rng_state(st["rng"])
    log.info(f"restored rank state from {spath} (cursor={st['cursor']})")
ddp = nn.parallel.DistributedDataParallel(model)
t = torch.tensor([start]); dist.broadcast(t, 0); start = int(t)

g = torch.Generator().manual_seed(rank)
for step in range(start, start + args.steps):
    x = torch.randn(16, 32, generator=g)
    y = torch.randint(0, 4, (16,), generator=g)
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    log.info(f"step {step} loss={loss.item():.4f}")
    if (step + 1) % args.save_every == 0:
        if rank == 0:
            ck = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1}
            if args.store_config:
                ck["config"] = cfg
            buf = io.BytesIO(); torch.save(ck, buf)
            os.makedirs(args.save_dir, exist_ok=True)
            path = os.path.join(args.save_dir, f"{args.run_name + '-' if args.run_name else ''}ckpt-{step + 1}.pt")
            with open(path + ".tmp", "wb") as f:
                f.write(buf.getvalue())
            os.replace(path + ".tmp", path)
            log.info(f"saved checkpoint {path} ({len(buf.getvalue()) / 1e6:.2f} MB)")
        rdir = os.path.join(args.save_dir, f"rank{rank}")
        os.makedirs(rdir, exist_ok=True)
        torch.save({"rng": torch.get_rng_state(), "cursor": step + 1}, os.path.join(rdir, f"state-{step + 1}.pt"))
        dist.barrier()
    time.sleep(0.05)
log.info("done")
dist.destroy_process_group()
