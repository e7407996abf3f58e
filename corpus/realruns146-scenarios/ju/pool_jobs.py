"""Hyper-parameter sweep: each task trains a small torch MLP on a synthetic task and returns the val loss.
--backend loky | pool | futures.  Task pids are written to <rundir>/tasks.pid so outside actors can act on them.
--feat-cache-mb : each task first builds a float64 feature cache of this size (numpy)."""
import argparse, os, time, sys, logging
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--backend", default="loky")
p.add_argument("--jobs", type=int, default=2)
p.add_argument("--trials", type=int, default=8)
p.add_argument("--epochs", type=int, default=150)
p.add_argument("--rundir", default="runs/tmp")
p.add_argument("--feat-cache-mb", type=int, default=0)
p.add_argument("--verbose", type=int, default=10)
p.add_argument("--lr-scale", type=float, default=1.0)
args = p.parse_args()
os.makedirs(args.rundir, exist_ok=True)


def trial(k, lr, width):
    import torch, torch.nn as nn
    torch.set_num_threads(1)
    with open(os.path.join(args.rundir, "tasks.pid"), "a") as f:
        f.write(f"{k} {os.getpid()}\n")
    if args.feat_cache_mb:
        cache = np.ones((args.feat_cache_mb * (1 << 20)) // 8)
    g = torch.Generator().manual_seed(k)
    X = torch.randn(512, 20, generator=g); w = torch.randn(20, 1, generator=g)
    y = X @ w + 0.1 * torch.randn(512, 1, generator=g)
    net = nn.Sequential(nn.Linear(20, width), nn.ReLU(), nn.Linear(width, 1))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    for e in range(args.epochs):
        loss = nn.functional.mse_loss(net(X[:400]), y[:400])
        opt.zero_grad(); loss.backward(); opt.step()
        time.sleep(0.01)
    with torch.no_grad():
        val = nn.functional.mse_loss(net(X[400:]), y[400:]).item()
    print(f"trial {k} lr={lr:.0e} width={width} val_mse={val:.4f}", flush=True)
    return k, lr, width, val


def grid():
    lrs = [x * args.lr_scale for x in (1e-3, 3e-3, 1e-2, 3e-2)]
    widths = [32, 64]
    return [(k, lrs[k % 4], widths[(k // 4) % 2]) for k in range(args.trials)]


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.info("sweep: %d trials, backend=%s, n_jobs=%d", args.trials, args.backend, args.jobs)
    t0 = time.time()
    if args.backend == "loky":
        from joblib import Parallel, delayed
        res = Parallel(n_jobs=args.jobs, verbose=args.verbose)(delayed(trial)(*t) for t in grid())
    elif args.backend == "pool":
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            res = pool.starmap(trial, grid())
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing as mp
        with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn")) as ex:
            futs = [ex.submit(trial, *t) for t in grid()]
            res = [f.result() for f in futs]
    ok = [r for r in res if np.isfinite(r[3])]
    if len(ok) < len(res):
        logging.warning("%d of %d trials diverged (non-finite val_mse); ignoring them", len(res) - len(ok), len(res))
    best = min(ok, key=lambda r: r[3])
    logging.info("best trial %d lr=%g width=%d val_mse=%.4f (%.1fs)", *best, time.time() - t0)
