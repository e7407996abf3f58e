"""Cross-validated model selection with joblib (loky) workers."""
import argparse, os, time, warnings, logging
import numpy as np
from joblib import Parallel, delayed
p = argparse.ArgumentParser()
p.add_argument("--n-jobs", type=int, default=2)
p.add_argument("--task-sleep", type=float, default=0.0)
p.add_argument("--mode", default="cv", choices=["cv", "convergence"])
p.add_argument("--folds", type=int, default=8)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("cv")
d = np.load("/work/rr99/ez/data/shard_01.npz"); X, y = d["X"], d["y"]

def fit_fold(k, C):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import PolynomialFeatures
    idx = np.arange(len(y)); va = idx % args.folds == k
    Xp = PolynomialFeatures(3).fit_transform(X) * 50.0 if args.mode == "convergence" else X
    m = LogisticRegression(C=C, max_iter=15 if args.mode == "convergence" else 200)
    m.fit(Xp[~va], y[~va])
    if args.task_sleep: time.sleep(args.task_sleep)
    return k, C, m.score(Xp[va], y[va])

if __name__ == "__main__":
    grid = [(k, C) for C in (0.01, 0.1, 1.0) for k in range(args.folds)]
    log.info("starting %d fits on %d loky workers", len(grid), args.n_jobs)
    res = Parallel(n_jobs=args.n_jobs, backend="loky", verbose=10)(delayed(fit_fold)(k, C) for k, C in grid)
    for C in (0.01, 0.1, 1.0):
        log.info("C=%s mean acc=%.4f", C, np.mean([s for k, c, s in res if c == C]))
    log.info("done")
