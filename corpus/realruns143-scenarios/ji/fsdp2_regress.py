"""FSDP2 (fully_shard) regression MLP on per-rank .npy feature files."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data/feat")
p.add_argument("--prep", action="store_true")
p.add_argument("--world", type=int, default=4)
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--bad-kind", default="none")   # extra-col | float64
p.add_argument("--steps", type=int, default=30)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--dim", type=int, default=32)
p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", default="46970")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--amp", action="store_true", help="mixed precision config copied from the GPU recipe")
args = p.parse_args()

def prep():
    os.makedirs(args.data_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    w = rng.normal(size=(args.dim,))
    for r in range(args.world):
        X = rng.normal(size=(512, args.dim)).astype(np.float32)
        y = (X @ w + 0.1 * rng.normal(size=512)).astype(np.float32)
        if r == args.bad_rank and args.bad_kind == "extra-col":
            X = np.concatenate([X, np.arange(512, dtype=np.float32)[:, None]], 1)  # exporter added the row id column
        if r == args.bad_rank and args.bad_kind == "float64":
            X = X.astype(np.float64)   # exporter re-ran with pandas defaults
        np.save(os.path.join(args.data_dir, f"X_{r}.npy"), X); np.save(os.path.join(args.data_dir, f"y_{r}.npy"), y)
    print("prepared", args.data_dir)

def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=args.port)
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
    log = logging.getLogger("fsdp2")
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(args.dim, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.from_numpy(np.load(os.path.join(args.data_dir, f"X_{rank}.npy")))
    y = torch.from_numpy(np.load(os.path.join(args.data_dir, f"y_{rank}.npy")))
    log.info(f"loaded features {tuple(X.shape)} {X.dtype}, targets {tuple(y.shape)}")
    scaler = torch.amp.GradScaler("cuda", enabled=args.amp)
    for step in range(1, args.steps + 1):
        i = (step * args.bs) % (len(X) - args.bs)
        xb, yb = X[i:i + args.bs], y[i:i + args.bs]
        with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=args.amp):
            pred = model(xb)
            loss = F.mse_loss(pred.squeeze(-1), yb)
        scaler.scale(loss).backward()
        if args.clip:
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        scaler.step(opt); scaler.update(); opt.zero_grad()
        if step % 5 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.prep:
        prep(); sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
