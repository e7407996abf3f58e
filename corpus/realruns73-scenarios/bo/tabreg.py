"""Tabular regression (synthetic 'house prices') with an MLP, checkpoints and resume.
--fault {none,f64,onecycle,sampler,nan}"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--wd-groups", action="store_true", help="no weight decay on biases (2 param groups)")
p.add_argument("--save", default="")
p.add_argument("--resume", default="")
p.add_argument("--save-args", action="store_true")
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()


def make_data(n=2000, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = X @ w + 0.5 * np.sin(X[:, 0] * 3) + rng.normal(scale=0.1, size=n)
    return X, y


def main():
    dist_on = "WORLD_SIZE" in os.environ
    rank, world = 0, 1
    if dist_on:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    X, y = make_data()
    mu, sd = X.mean(0), X.std(0)
    X = (X - mu) / sd
    if args.fault == "f64":
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y).unsqueeze(1)   # float64 straight from numpy
    else:
        Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32).unsqueeze(1)
    ds = TensorDataset(Xt, yt)
    sampler = None
    if dist_on:
        from torch.utils.data.distributed import DistributedSampler
        sampler = DistributedSampler(ds)
    if args.fault == "sampler":
        from torch.utils.data import RandomSampler
        sampler = RandomSampler(ds, replacement=True, num_samples=1024)
    dl = DataLoader(ds, batch_size=64, shuffle=True if args.fault == "sampler" else sampler is None,
                    sampler=sampler, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(X.shape[1], args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1))
    if args.wd_groups:
        decay = [p for n, p in model.named_parameters() if n.endswith("weight")]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    if args.fault == "onecycle":
        # total_steps computed from the dataset size, forgetting the last partial batch
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr * 10,
                                                    total_steps=args.epochs * (len(ds) // 64))
    else:
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    start_ep = 0
    if args.resume:
        print(f"[rank{rank}] resuming from {args.resume}", flush=True)
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        start_ep = ck["epoch"] + 1
    if dist_on:
        model = nn.parallel.DistributedDataParallel(model)
    crit = nn.MSELoss()
    for ep in range(start_ep, start_ep + args.epochs):
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(ep)
        t0, tot, n = time.time(), 0.0, 0
        for xb, yb in dl:
            pred = model(xb)
            loss = crit(pred, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if args.fault == "onecycle":
                sched.step()
            tot += loss.item() * len(xb); n += len(xb)
            if args.fault == "nan" and not np.isfinite(loss.item()):
                raise FloatingPointError(f"loss is {loss.item()} at epoch {ep}")
        if args.fault != "onecycle":
            sched.step()
        print(f"[rank{rank}] epoch {ep:02d} train_mse {tot/n:.4f} lr {opt.param_groups[0]['lr']:.2e} ({time.time()-t0:.1f}s)", flush=True)
        if args.save and rank == 0:
            os.makedirs(os.path.dirname(args.save) or ".", exist_ok=True)
            m = model.module if dist_on else model
            ck = {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": ep}
            if args.save_args:
                ck["args"] = args
                ck["feature_mean"] = mu
            torch.save(ck, args.save)
            print(f"[rank{rank}] saved checkpoint to {args.save}", flush=True)
    if dist_on:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank{rank}] training complete", flush=True)


if __name__ == "__main__":
    main()
