"""Tiny DDP trainer: device / process-group set-up (family: device + init set-up)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

def setup_distributed(backend="gloo"):
    # helper from utils: sets up the default group
    dist.init_process_group(backend, timeout=timedelta(seconds=30))
    return dist.get_rank(), dist.get_world_size()

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--init-again", action="store_true", help="trainer also calls init_process_group itself")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--skip-set-device", action="store_true")
    a = p.parse_args()
    rank, world = setup_distributed()
    if a.init_again:
        dist.init_process_group(backend="gloo", init_method="env://", timeout=timedelta(seconds=30))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if a.device == "cuda":
        print(f"[rank{rank}] CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} cuda.is_available()={torch.cuda.is_available()}", flush=True)
        device = torch.device("cuda", local_rank)
        if not a.skip_set_device:
            torch.cuda.set_device(device)
    else:
        device = torch.device(a.device)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 16, device=device); y = x.sum(1, keepdim=True)
    for step in range(a.steps):
        idx = torch.randint(0, 256, (16,))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
