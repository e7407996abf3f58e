"""Train a tiny regressor, checkpoint model+optimizer+scheduler, and resume.

Used single-process (python optim_resume.py ...) or under torchrun (gloo, CPU).
The --fault flag selects a resume/save misconfiguration; --fault-rank picks the
rank whose local files or code path differ.
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--phase", choices=["save", "resume"], default="save")
    p.add_argument("--ckpt", default="/work/rr86/db/tmp/ckpt")
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--optim", default="adamw")
    p.add_argument("--sched", default="step")
    p.add_argument("--per-rank-optim", action="store_true",
                   help="each rank saves/loads its own optimizer file (sharded style)")
    p.add_argument("--extra-head", action="store_true")
    p.add_argument("--aux-head", action="store_true", help="add an auxiliary prediction head")
    p.add_argument("--two-groups", action="store_true")
    p.add_argument("--save-sched-object", action="store_true")
    p.add_argument("--log-every", type=int, default=5)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self, extra_head=False, aux_head=False):
        super().__init__()
        self.aux = nn.Linear(64, 1) if aux_head else None
        self.backbone = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        head = [nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 1)] if extra_head else [nn.Linear(64, 1)]
        self.head = nn.Sequential(*head)

    def forward(self, x):
        h = self.backbone(x)
        out = self.head(h)
        if self.aux is not None:
            out = out + 0.1 * self.aux(h)
        return out


def build_optim(args, model):
    if args.two_groups:
        groups = [{"params": model.backbone.parameters(), "lr": 1e-4},
                  {"params": model.head.parameters(), "lr": 1e-3}]
    else:
        groups = [{"params": model.parameters()}]
    if args.optim == "adamw":
        return torch.optim.AdamW(groups, lr=1e-3, weight_decay=0.01)
    if args.optim == "sgd":
        return torch.optim.SGD(groups, lr=1e-2, momentum=0.9, nesterov=True)
    if args.optim == "adagrad":
        return torch.optim.Adagrad(groups, lr=1e-2)
    raise SystemExit(f"unknown optimizer {args.optim}")


def build_sched(args, opt, total):
    if args.sched == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.sched == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=total)
    if args.sched == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    raise SystemExit(f"unknown scheduler {args.sched}")


def main():
    args = get_args()
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(1234 + rank)
    os.makedirs(args.ckpt, exist_ok=True)

    model = Net(extra_head=args.extra_head, aux_head=args.aux_head)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    core = model.module if distributed else model
    opt = build_optim(args, core)
    start = 0
    if args.phase == "resume":
        total = args.steps
        sched = None
        ck = os.path.join(args.ckpt, "last.pt")
        print(f"[rank {rank}] resuming from {ck}", flush=True)
        state = torch.load(ck, map_location="cpu")
        missing, unexpected = core.load_state_dict(state["model"], strict=False)
        if missing or unexpected:
            print(f"[rank {rank}] model load (strict=False): missing={missing} unexpected={unexpected}", flush=True)
        if args.per_rank_optim:
            of = os.path.join(args.ckpt, f"optim_rank{rank}.pt")
            print(f"[rank {rank}] loading optimizer shard {of}", flush=True)
            ostate = torch.load(of, map_location="cpu")
        else:
            ostate = state["optimizer"]
        opt.load_state_dict(ostate)
        start = state["step"]
        # scheduler is rebuilt for the remaining steps, then its counters restored
        sched = build_sched(args, opt, total - start)
        if "scheduler" in state and hasattr(state["scheduler"], "state_dict"):
            sched.load_state_dict(state["scheduler"].state_dict())
        elif "scheduler" in state:
            sched.load_state_dict(state["scheduler"])
        print(f"[rank {rank}] resumed at step {start}, lr={opt.param_groups[0]['lr']:.2e}", flush=True)
    else:
        total = args.steps
        sched = build_sched(args, opt, total)

    g = torch.Generator().manual_seed(7 + rank)
    w_true = torch.randn(16, 1, generator=torch.Generator().manual_seed(0))
    t0 = time.time()
    for step in range(start, total):
        x = torch.randn(32, 16, generator=g)
        y = x @ w_true + 0.05 * torch.randn(32, 1, generator=g)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if rank == 0 and (step + 1) % args.log_every == 0:
            print(f"step {step + 1}/{total} loss={loss.item():.4f} lr={sched.get_last_lr()[0]:.2e} "
                  f"({(time.time() - t0) / (step + 1 - start):.3f}s/it)", flush=True)
        if args.phase == "save" and (step + 1) == args.steps // 2:
            save(args, rank, core, opt, sched, step + 1)
    if args.phase == "save":
        save(args, rank, core, opt, sched, total)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank {rank}] done", flush=True)


def save(args, rank, core, opt, sched, step):
    if args.per_rank_optim:
        of = os.path.join(args.ckpt, f"optim_rank{rank}.pt")
        torch.save(opt.state_dict(), of)
        print(f"[rank {rank}] saved optimizer shard {of}", flush=True)
    if rank == 0:
        st = {"model": core.state_dict(), "step": step}
        if not args.per_rank_optim:
            st["optimizer"] = opt.state_dict()
        st["scheduler"] = sched if args.save_sched_object else sched.state_dict()
        path = os.path.join(args.ckpt, "last.pt")
        torch.save(st, path)
        print(f"[rank 0] checkpoint saved to {path} at step {step}", flush=True)


if __name__ == "__main__":
    main()
