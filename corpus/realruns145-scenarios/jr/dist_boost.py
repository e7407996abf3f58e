"""Data-parallel gradient boosting: each torch.distributed rank trains XGBoost/LightGBM on its own shard,
metrics are exchanged over gloo and rank 0 keeps the best model."""
import argparse, os, sys, time, logging
from datetime import timedelta
p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgb", choices=["xgb", "lgb"])
p.add_argument("--shards", default="data/shards")
p.add_argument("--crosses-rank", type=int, default=-1, help="rank that builds pairwise feature crosses")
p.add_argument("--rounds", type=int, default=60)
p.add_argument("--legacy-params", action="store_true")
p.add_argument("--unused-params", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", default="47500")
a = p.parse_args()

import numpy as np
import torch, torch.distributed as dist

def prepare_shards(n):
    os.makedirs(a.shards, exist_ok=True)
    rng = np.random.default_rng(123)
    for r in range(n):
        f = os.path.join(a.shards, f"part-{r:05d}.npz")
        if not os.path.exists(f):
            X = rng.normal(size=(3000, 24)).astype(np.float32)
            y = (X[:, 0] - X[:, 3] + 0.3 * rng.normal(size=3000) > 0).astype(np.float32)
            np.savez_compressed(f, X=X, y=y)

def run(rank, world, feature_hook=None):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank{rank} %(levelname)s %(message)s", force=True)
    log = logging.getLogger("dboost")
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    log.info("joined process group: world=%d backend=%s", world, dist.get_backend())
    d = np.load(os.path.join(a.shards, f"part-{rank:05d}.npz"))
    X, y = d["X"], d["y"]
    log.info("shard rows=%d features=%d", *X.shape)
    if feature_hook is not None:
        X = feature_hook(X)
    if rank == a.crosses_rank:
        log.info("building pairwise feature crosses for shard")
        crosses = np.einsum("ni,nj->nij", X, X).reshape(len(X), -1)
        crosses = np.repeat(crosses, 400, axis=0)[: len(X)]  # oversampled rare crosses
        X = np.concatenate([X, crosses], axis=1)
    ntr = int(len(X) * 0.8)
    t0 = time.time()
    if a.lib == "xgb":
        import xgboost as xgb
        params = {"max_depth": 5, "eta": 0.1, "objective": "binary:logistic", "eval_metric": "logloss", "nthread": 1}
        if a.legacy_params:
            params.update({"n_estimators": 300, "silent": 1, "tree_method": "exact", "gpu_id": 0})
        if a.unused_params:
            params.update({"n_estimators": 300, "silent": 1, "num_boost_round": 300})
        dtr = xgb.DMatrix(X[:ntr], label=y[:ntr]); dva = xgb.DMatrix(X[ntr:], label=y[ntr:])
        bst = xgb.train(params, dtr, a.rounds, evals=[(dva, "val")], early_stopping_rounds=10, verbose_eval=20)
        score = float(bst.eval(dva).split(":")[1])
    else:
        import lightgbm as lgb
        dtr = lgb.Dataset(X[:ntr], y[:ntr]); dva = lgb.Dataset(X[ntr:], y[ntr:], reference=dtr)
        bst = lgb.train({"objective": "binary", "verbose": -1, "num_threads": 1}, dtr, a.rounds, valid_sets=[dva],
                        callbacks=[lgb.early_stopping(10), lgb.log_evaluation(20)])
        score = bst.best_score["valid_0"]["binary_logloss"]
    log.info("local val logloss %.5f (%.1fs)", score, time.time() - t0)
    scores = [None] * world
    dist.all_gather_object(scores, score)
    if rank == 0:
        best = int(np.argmin(scores))
        log.info("all ranks: %s -> best shard model from rank %d", ["%.4f" % s for s in scores], best)
    dist.barrier()
    dist.destroy_process_group()

def spawn_entry(rank, world, hook):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=a.port)
    run(rank, world, hook)

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        prepare_shards(a.spawn)
        mp.set_start_method("spawn", force=True)
        clip = 4.0
        mp.spawn(spawn_entry, args=(a.spawn, lambda X: np.clip(X, -clip, clip)), nprocs=a.spawn)
    else:
        if int(os.environ.get("RANK", "0")) == 0:
            prepare_shards(int(os.environ.get("WORLD_SIZE", "1")))
        else:
            time.sleep(2)
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
