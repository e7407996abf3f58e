"""Small probabilistic models trained under DDP/gloo: a Gaussian-head regressor and a ZCA-whitened feature model."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--model", default="gauss")  # gauss|whiten
p.add_argument("--scale-act", default="softplus")  # softplus|none
p.add_argument("--steps", type=int, default=60)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--dim", type=int, default=16)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--dup-rank", type=int, default=-1)
p.add_argument("--dup-step", type=int, default=0)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s", stream=sys.stdout)

def main():
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log = logging.getLogger(f"rank{rank}")
    torch.manual_seed(0)
    D = args.dim
    if args.model == "gauss":
        net = nn.Sequential(nn.Linear(D, 64), nn.Tanh(), nn.Linear(64, 2))
    else:
        net = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 1))
    model = DDP(net) if world > 1 else net
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    w_true = torch.randn(D)
    t0 = time.time()
    for step in range(args.steps):
        g = torch.Generator().manual_seed(step * 97 + rank)
        x = torch.randn(args.batch, D, generator=g)
        # real-world feature matrix: last few columns are duplicated/derived columns
        if rank == args.dup_rank and step >= args.dup_step or args.dup_rank == -2:
            x[:, -3:] = x[:, :3] * 2.0
        y = x @ w_true + 0.3 * torch.randn(args.batch, generator=g)
        if args.model == "whiten":
            xc = x - x.mean(0)
            cov = xc.T @ xc / (x.shape[0] - 1)
            L = torch.linalg.cholesky(cov)  # ZCA/Cholesky whitening of the batch
            xw = torch.linalg.solve_triangular(L, xc.T, upper=False).T
            loss = F.mse_loss(model(xw).squeeze(-1), y)
        else:
            out = model(x)
            mu, s = out[:, 0], out[:, 1]
            scale = F.softplus(s) + 1e-4 if args.scale_act == "softplus" else s
            dist_y = torch.distributions.Normal(mu, scale)
            loss = -dist_y.log_prob(y).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log.info(f"step {step:4d} | nll/mse {loss.item():.4f} | lr {args.lr:.1e} | {(time.time()-t0)/(step+1)*1000:.1f} ms/step")
    log.info("done")
    if world > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
