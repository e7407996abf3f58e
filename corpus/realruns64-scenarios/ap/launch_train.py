"""Small DDP trainer used for launch / environment misconfiguration scenarios.

Fault selection flags pick which real misconfiguration is exercised on which rank.
"""
import argparse
import json
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
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse():
    p = argparse.ArgumentParser(description="tiny ddp trainer")
    p.add_argument("--config", default=None, help="yaml or json config")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--init-method", default="env://")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--pg-timeout", type=int, default=20)
    p.add_argument("--log-style", choices=["print", "logging", "tqdm"], default="print")
    p.add_argument("--fault", default="none",
                   choices=["none", "cuda-device", "tb-logger", "rank-config", "init-twice",
                            "cuda-sysinfo", "wandb"])
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=10)
    p.add_argument("--noisy", action="store_true", help="emit healthy-but-alarming warnings")
    p.add_argument("--out", default="/work/rr64/ap/out")
    return p.parse_args()


def load_config(path):
    if path is None:
        return {}
    with open(path) as f:
        if path.endswith((".yaml", ".yml")):
            import yaml
            return yaml.safe_load(f)
        return json.load(f)


def setup_distributed(args):
    dist.init_process_group(backend=args.backend, init_method=args.init_method,
                            timeout=timedelta(seconds=args.pg_timeout))
    return dist.get_rank(), dist.get_world_size()


def main():
    args = parse()
    cfg = load_config(args.config)
    for k, v in (cfg or {}).get("train", {}).items():
        setattr(args, k.replace("-", "_"), v)

    rank, world = setup_distributed(args)
    local_rank = int(os.environ.get("LOCAL_RANK", rank))

    if args.log_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")

    def say(msg):
        if args.log_style == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    say(f"initialized backend={dist.get_backend()} world_size={world} local_rank={local_rank} "
        f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")

    if args.fault == "init-twice" and rank == args.fault_rank:
        # a helper that "makes sure" distributed is set up, called again after model build
        say("re-running setup_distributed() from build_model helper")
        setup_distributed(args)

    if args.fault == "cuda-sysinfo" and rank == args.fault_rank:
        say("collecting system info for run metadata")
        say(f"gpu: {torch.cuda.get_device_name(local_rank)}")

    torch.manual_seed(0)
    n = 512
    x = torch.randn(n, 32)
    w_true = torch.randn(32, 4)
    y = (x @ w_true).argmax(1)
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=args.batch_size, sampler=sampler)

    shard_cfg = None
    if args.fault == "rank-config":
        # every rank reads its own shard description written by the data prep job
        shard_path = os.path.join(os.path.dirname(args.config or "."), f"shard_{rank:02d}.json")
        with open(shard_path) as f:
            shard_cfg = json.load(f)
        say(f"shard config: {shard_cfg}")

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    device = torch.device("cpu")
    if args.fault == "cuda-device" and rank == args.fault_rank:
        # stale per-host override: this host's config says it has a GPU
        device = torch.device(f"cuda:{local_rank}")
    ddp = DDP(model.to(device) if device.type == "cpu" else model,
              find_unused_parameters=args.noisy)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    lossf = nn.CrossEntropyLoss()

    if args.noisy and rank == 0:
        warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. "
                      "Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)

    it = range(args.steps)
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stderr, mininterval=0, ncols=90)
    step_iter = iter(dl)
    for step in it:
        try:
            xb, yb = next(step_iter)
        except StopIteration:
            sampler.set_epoch(step)
            step_iter = iter(dl)
            xb, yb = next(step_iter)
        if args.fault == "cuda-device" and rank == args.fault_rank and step == args.fault_step:
            xb, yb = xb.to(device), yb.to(device)
        if args.fault == "tb-logger" and rank == args.fault_rank and step == args.fault_step:
            say("creating SummaryWriter for metrics")
            from torch.utils.tensorboard import SummaryWriter
            SummaryWriter(os.path.join(args.out, "tb"))
        if args.fault == "wandb" and rank == args.fault_rank and step == args.fault_step:
            import wandb
            wandb.init(project="tiny")
        out = ddp(xb)
        loss = lossf(out, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.noisy and step == 3:
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite order.",
                          UserWarning)
        if step % 5 == 0 or step == args.steps - 1:
            t = torch.tensor([loss.item()])
            dist.all_reduce(t)
            msg = f"step {step}/{args.steps} loss {t.item() / world:.4f} lr {args.lr}"
            if args.log_style == "tqdm" and rank == 0:
                it.set_postfix(loss=f"{t.item() / world:.4f}")
            elif rank == 0:
                say(msg)
        time.sleep(0.05)
    dist.barrier()
    if rank == 0:
        say("training finished, saving model")
        os.makedirs(args.out, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
