"""Tiny DDP trainer whose CLI is parsed by argparse (family: argparse set-up)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

def build_parser(accept_local_rank):
    p = argparse.ArgumentParser(description="tiny regression trainer")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--steps", type=int, default=20)
    if accept_local_rank:
        p.add_argument("--local-rank", "--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    return p

def main():
    accept = os.environ.get("ACCEPT_LOCAL_RANK", "0") == "1"
    args = build_parser(accept).parse_args()
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    x = torch.randn(256, 16); y = x.sum(1, keepdim=True)
    for ep in range(args.epochs):
        for step in range(args.steps):
            idx = torch.randint(0, 256, (args.batch_size,))
            loss = nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0 and rank == 0:
                print(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        print(f"training done world_size={world}", flush=True)
    if distributed:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
