"""Per-rank gradient-boosting training (XGBoost / LightGBM / CatBoost) with gloo metric sync.
Launch with torchrun (env RANK/WORLD_SIZE), with --spawn N (torch.multiprocessing.spawn), or plain python."""
import argparse, os, sys, time, resource
from datetime import timedelta
p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgboost", choices=["xgboost", "lightgbm", "catboost"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--rounds", type=int, default=60)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--shard-dir", default="/work/rr135/il/tmp/shards")
p.add_argument("--train-dir", default="/work/rr135/il/tmp/catboost_info")
p.add_argument("--mem-limit-mb", type=int, default=0)
p.add_argument("--import-after-limit", action="store_true")
a = p.parse_args()
import numpy as np

def make_shards(world):
    os.makedirs(a.shard_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    for r in range(world):
        X = rng.normal(size=(4000, 30)).astype(np.float32)
        y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=4000) > 0.6).astype(np.float32)
        np.savez(os.path.join(a.shard_dir, f"part-{r:05d}.npz"), X=X, y=y)

def run(rank, world):
    import torch, torch.distributed as dist
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=40))
    tag = f"[rank{rank}]"
    if a.lib == "xgboost" and not a.import_after_limit: import xgboost  # load the native library before any per-task limit
    if a.mem_limit_mb and rank == a.fault_rank:
        resource.setrlimit(resource.RLIMIT_AS, (a.mem_limit_mb << 20, a.mem_limit_mb << 20))
        print(f"{tag} address-space limit {a.mem_limit_mb} MiB (job memory per task)", flush=True)
    path = os.path.join(a.shard_dir, f"part-{rank:05d}.npz")
    if a.fault == "missing_shard" and rank == a.fault_rank:
        path = os.path.join(a.shard_dir, f"part-{rank:05d}.parquet.npz")  # manifest written by the new export job
    d = np.load(path)
    X, y = d["X"], d["y"]
    if a.fault == "big_features" and rank == a.fault_rank:
        X = np.tile(X, (40, 1)); y = np.tile(y, 40)   # rank 1 gets the full un-sampled partition
    if a.fault == "label_range":
        y = (np.digitize(X[:, 0], [-0.5, 0.5]) + (X[:, 1] > 2.0)).astype(np.float32)  # 0..3, but num_class=3
    n = int(len(X) * 0.8)
    print(f"{tag} shard {os.path.basename(path)} rows={len(X)} features={X.shape[1]}", flush=True)
    t0 = time.time()
    if a.lib == "xgboost":
        import xgboost as xgb
        dtr = xgb.DMatrix(X[:n], label=y[:n]); dva = xgb.DMatrix(X[n:], label=y[n:])
        params = {"objective": "binary:logistic", "eval_metric": "logloss", "max_depth": 6, "eta": 0.1, "nthread": 1}
        if a.fault == "label_range":
            params.update(objective="multi:softprob", num_class=3, eval_metric="mlogloss")
        cbs = []
        if a.fault == "callback_metric" and rank == a.fault_rank:
            class LogToConsole(xgb.callback.TrainingCallback):
                def after_iteration(self, model, epoch, evals_log):
                    if epoch % 10 == 0:
                        print(f"{tag} iter {epoch} val auc {evals_log['val']['auc'][-1]:.4f}", flush=True)
                    return False
            cbs.append(LogToConsole())
        bst = xgb.train(params, dtr, a.rounds, evals=[(dtr, "train"), (dva, "val")], verbose_eval=20, callbacks=cbs)
        pred = bst.predict(dva)
    elif a.lib == "lightgbm":
        import lightgbm as lgb
        params = {"objective": "binary", "num_leaves": 63, "min_data_in_leaf": 5, "learning_rate": 0.1,
                  "num_threads": 1, "verbose": 1 if a.fault == "noisy" else 0, "min_gain_to_split": 0.0}
        if a.fault == "noisy":
            params.update(num_leaves=255, max_depth=4, min_data_in_leaf=400, feature_fraction=0.5)
        dtr = lgb.Dataset(X[:n], label=y[:n]); dva = lgb.Dataset(X[n:], label=y[n:], reference=dtr)
        bst = lgb.train(params, dtr, a.rounds, valid_sets=[dva], callbacks=[lgb.log_evaluation(20)])
        pred = bst.predict(X[n:])
    else:
        from catboost import CatBoostClassifier
        m = CatBoostClassifier(iterations=a.rounds, depth=6, verbose=20, thread_count=1, train_dir=a.train_dir)
        m.fit(X[:n], y[:n], eval_set=(X[n:], y[n:]))
        pred = m.predict_proba(X[n:])[:, 1]
    acc = float(((pred > 0.5) == y[n:]).mean()) if pred.ndim == 1 else float((pred.argmax(1) == y[n:]).mean())
    print(f"{tag} trained in {time.time()-t0:.1f}s val_acc={acc:.4f}", flush=True)
    if world > 1:
        t = torch.tensor([acc]); dist.all_reduce(t)
        if rank == 0:
            print(f"[rank0] mean val_acc over {world} shards = {t.item()/world:.4f}", flush=True)
        dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "46484")
        make_shards(a.spawn)
        mp.spawn(run, args=(a.spawn,), nprocs=a.spawn)
    else:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
        if rank == 0: make_shards(max(world, 2))
        else: time.sleep(2)
        run(rank, world)
