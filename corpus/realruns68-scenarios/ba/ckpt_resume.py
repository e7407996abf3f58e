"""Fine-tune-from-checkpoint trainer (DDP, gloo). --prep writes the checkpoint the run will resume from."""
import argparse, datetime, os, shutil, sys, time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--prep", default="good", choices=["good", "wide", "truncated", "namespace", "optim"])
p.add_argument("--ckpt", required=True)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-name-from-config", action="store_true")
p.add_argument("--out-dir", default="/work/rr68/ba/work/ckout")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--tags", default="")
args = p.parse_args()


def build(hidden):
    return nn.Sequential(nn.Linear(32, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 4))


def prepare():
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    if args.prep == "wide":
        m = build(128)  # the checkpoint of the large variant
        torch.save({"model": m.state_dict(), "step": 4000}, args.ckpt)
    elif args.prep == "namespace":
        m = build(args.hidden)
        torch.save({"model": m.state_dict(), "step": 4000, "args": args}, args.ckpt)
    elif args.prep == "truncated":
        m = build(args.hidden)
        tmp = args.ckpt + ".full"
        torch.save({"model": m.state_dict(), "step": 4000}, tmp)
        with open(tmp, "rb") as f, open(args.ckpt, "wb") as g:
            data = f.read()
            g.write(data[: len(data) // 2])  # copy interrupted half-way (rsync killed)
        os.remove(tmp)
    elif args.prep == "optim":
        m = build(args.hidden)
        opt = torch.optim.AdamW([{"params": list(m.parameters())[:4]}, {"params": list(m.parameters())[4:], "weight_decay": 0.0}])
        m(torch.randn(2, 32)).sum().backward(); opt.step()
        torch.save({"model": m.state_dict(), "optim": opt.state_dict(), "step": 4000}, args.ckpt)
    else:
        m = build(args.hidden)
        opt = torch.optim.AdamW(m.parameters(), lr=args.lr)
        torch.save({"model": m.state_dict(), "optim": opt.state_dict(), "step": 4000}, args.ckpt)


def main():
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    print(f"[{rank}/{world}] building model hidden={args.hidden}", flush=True)
    if rank == 0:
        prepare()
    if distributed:
        dist.barrier()
    model = build(args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    print(f"[{rank}/{world}] resuming from {args.ckpt}", flush=True)
    state = torch.load(args.ckpt, map_location="cpu")
    model.load_state_dict(state["model"])
    if "optim" in state:
        opt.load_state_dict(state["optim"])
    start = state.get("step", 0)
    print(f"[{rank}/{world}] resumed at step {start}", flush=True)
    if distributed:
        model = DDP(model)
    for step in range(start, start + args.steps):
        x = torch.randn(8, 32); y = torch.randint(0, 4, (8,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[{rank}/{world}] step {step} loss={loss.item():.4f}", flush=True)
    if rank == 0:
        name = "final.pt"
        if args.save_name_from_config:
            cfg = {k: v for k, v in vars(args).items()}
            name = "ckpt_" + "_".join(f"{k}={v}" for k, v in cfg.items()).replace("/", "-") + ".pt"
        os.makedirs(args.out_dir, exist_ok=True)
        path = os.path.join(args.out_dir, name)
        print(f"[{rank}/{world}] saving {path}", flush=True)
        torch.save({"model": (model.module if distributed else model).state_dict()}, path)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[{rank}/{world}] finished", flush=True)


if __name__ == "__main__":
    main()
