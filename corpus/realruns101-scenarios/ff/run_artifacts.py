"""DDP trainer that names its output folder after the full hyper-parameter set (run-name family)."""
import argparse, os, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--out", default="work/runs")
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=8)
p.add_argument("--notes", default="")
p.add_argument("--tags", default="")
args = p.parse_args()

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    r, world = dist.get_rank(), dist.get_world_size()
    run_name = "mlp_" + "_".join(f"{k}-{v}".replace("/", "|") for k, v in sorted(vars(args).items()) if k != "out")
    if r == 0:
        print(f"run name: {run_name}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(r)
    for step in range(args.steps):
        x = torch.randn(16, 32, generator=g); y = (x[:, 0] > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if r == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if (step + 1) % args.save_every == 0 and r == 0:
            d = os.path.join(args.out, run_name)
            os.makedirs(d, exist_ok=True)
            torch.save(model.module.state_dict(), os.path.join(d, f"step{step+1}.pt"))
            print(f"saved {d}/step{step+1}.pt", flush=True)
        time.sleep(0.05)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
