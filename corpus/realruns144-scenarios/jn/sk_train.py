"""scikit-learn model search; optional torch.multiprocessing.spawn over regions (one model per rank,
validation scores gathered with gloo).

--mode single|spawn  --fault none|empty  --fault-rank R
"""
import argparse, os, sys, warnings, logging, time
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--mode", default="single")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--port", default="47250")
args = p.parse_args()

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.pipeline import make_pipeline
from sklearn.model_selection import train_test_split


def load_region(region, seed):
    X, y = make_classification(n_samples=3000, n_features=30, n_informative=10, random_state=seed)
    days = np.random.default_rng(seed).integers(0, 365, size=len(y))
    # keep the most recent quarter only
    cutoff = 273 if not (args.fault == "empty" and region == args.fault_rank) else 400  # region's export has day-of-year shifted
    m = days >= cutoff
    return X[m], y[m]


def fit_region(rank, log):
    X, y = load_region(rank, seed=rank)
    log.info("region %d: %d rows after date filter", rank, len(y))
    Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=0)
    scores = {}
    for name, est in [
        ("logreg", make_pipeline(StandardScaler(), LogisticRegression(max_iter=15))),
        ("mlp", MLPClassifier(hidden_layer_sizes=(64,), max_iter=30, random_state=0)),
    ]:
        t0 = time.time()
        est.fit(Xtr, ytr)
        scores[name] = est.score(Xva, yva)
        log.info("region %d %s val acc %.4f (%.1fs)", rank, name, scores[name], time.time() - t0)
    return max(scores.values())


def worker(rank, world):
    import torch, torch.distributed as dist
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank {rank}] %(message)s")
    log = logging.getLogger("sk")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=45))
    best = fit_region(rank, log)
    t = torch.tensor([best])
    dist.all_reduce(t)
    log.info("mean best val acc over regions: %.4f", t.item() / world)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.mode == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.nproc,), nprocs=args.nproc)
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
        log = logging.getLogger("sk")
        for r in range(3):
            fit_region(r, log)
        log.info("done")
