"""Data-parallel gradient-boosting 'ensemble' training: each rank fits a booster on its shard,
metrics are all-reduced over gloo; optional torch MLP head stacked on leaf features."""
import argparse, os, sys, time, logging
from datetime import timedelta
import numpy as np
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--model", default="xgb", choices=["xgb", "lgb", "catboost", "sk"])
p.add_argument("--objective", default="binary")
p.add_argument("--num-class", type=int, default=3)
p.add_argument("--rounds", type=int, default=20)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--data-dir", default="/work/rr99/ez/data")
p.add_argument("--round-sleep", type=float, default=0.0)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--head", action="store_true")
p.add_argument("--head-ckpt", default="")
p.add_argument("--log-ts", action="store_true")
p.add_argument("--early-stopping", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.log_ts:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format=f"[rank{rank}] %(message)s")
log = logging.getLogger("gbm_dist")
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))

def load_shard(r):
    path = os.path.join(args.data_dir, f"shard_{r:02d}.npz")
    if args.fault == "missing-shard" and r == args.fault_rank:
        path = os.path.join(args.data_dir, "shards_v2", f"shard_{r:02d}.npz")  # stale config path
    d = np.load(path)
    return d["X"], d["y"]

X, y = load_shard(rank)
log.info("loaded shard %d: X=%s y=%s", rank, X.shape, y.shape)
if args.objective == "multiclass":
    y = (np.digitize(X[:, 0] + X[:, 1], [-0.7, 0.7])).astype(np.int64)
    if args.fault == "label" and rank == args.fault_rank:
        y = y + 1   # labels 1..3 from a 1-based export
elif args.fault == "label" and rank == args.fault_rank:
    y = np.where(y > 0, 2.0, 0.0)   # class ids re-encoded {0,2} upstream
if args.fault == "nan" and rank == args.fault_rank:
    X[::37, 3] = np.log(X[::37, 3] - 10.0)   # log of negative -> NaN
    X[::53, 5] = np.float64(1e308) * 10
if args.fault == "dead-column" and rank == args.fault_rank:
    X[:, 7] = 0.0   # sensor 7 missing on this shard, filled with 0 upstream
n_val = len(y) // 5
Xtr, ytr, Xva, yva = X[n_val:], y[n_val:], X[:n_val], y[:n_val]

t0 = time.time()
if args.model == "xgb":
    import xgboost as xgb
    params = {"objective": "multi:softprob" if args.objective == "multiclass" else "binary:logistic",
              "max_depth": 4, "eta": 0.2, "eval_metric": "mlogloss" if args.objective == "multiclass" else "logloss",
              "nthread": 1, "n_estimators": 200}
    if args.objective == "multiclass":
        params["num_class"] = args.num_class
    dtr = xgb.DMatrix(Xtr, label=ytr)
    dva = xgb.DMatrix(Xva, label=yva)
    evals = [] if args.fault == "earlystop-noeval" else [(dtr, "train"), (dva, "valid")]
    class SlowCB(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if args.round_sleep: time.sleep(args.round_sleep)
            return False
    booster = xgb.train(params, dtr, args.rounds, evals=evals, verbose_eval=5,
                        early_stopping_rounds=args.early_stopping or None, callbacks=[SlowCB()])
    pred = booster.predict(dva)
    leaves = booster.predict(xgb.DMatrix(X), pred_leaf=True)
elif args.model == "lgb":
    import lightgbm as lgb
    params = {"objective": args.objective, "num_leaves": 15, "learning_rate": 0.1, "num_threads": 1,
              "min_data_in_leaf": 5, "verbose": 1}
    if args.objective == "multiclass":
        params["num_class"] = args.num_class
    if args.fault == "categorical" and rank == args.fault_rank:
        Xtr = Xtr.copy(); Xtr[:, 2] = np.round(Xtr[:, 2] * 3)   # signed bucket ids
    dtr = lgb.Dataset(Xtr, label=ytr, categorical_feature=[2] if args.fault == "categorical" else "auto")
    dva = lgb.Dataset(Xva, label=yva, reference=dtr)
    cbs = [lgb.log_evaluation(5)]
    if args.early_stopping:
        cbs.append(lgb.early_stopping(args.early_stopping))
    valid_sets = [] if args.fault == "earlystop-noeval" else [dtr, dva]
    booster = lgb.train(params, dtr, args.rounds, valid_sets=valid_sets, valid_names=["train", "valid"][:len(valid_sets)], callbacks=cbs)
    pred = booster.predict(Xva)
    leaves = booster.predict(X, pred_leaf=True)
elif args.model == "catboost":
    from catboost import CatBoostClassifier
    m = CatBoostClassifier(iterations=args.rounds, depth=4, verbose=5, thread_count=1)
    m.fit(Xtr, ytr, eval_set=(Xva, yva))
    pred = m.predict_proba(Xva)[:, 1]
    leaves = None
else:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    m = LogisticRegression(max_iter=50)
    m.fit(Xtr, ytr)
    pred = m.predict_proba(Xva)[:, 1]
    leaves = None

if args.objective == "multiclass":
    acc = float((np.argmax(pred, 1) == yva).mean())
else:
    acc = float(((pred > 0.5) == (yva > 0.5)).mean())
log.info("booster done in %.1fs, shard valid acc=%.4f", time.time() - t0, acc)
t = torch.tensor([acc])
if world > 1:
    dist.all_reduce(t)
    t /= world
if rank == 0:
    log.info("ensemble mean valid acc=%.4f", t.item())
if args.model == "xgb" and args.objective != "multiclass":
    imp = booster.get_score(importance_type="gain")
    log.info("%d features used, top: %s", len(imp), sorted(imp, key=imp.get)[-3:])
    gain = torch.tensor([imp[k] for k in sorted(imp)], dtype=torch.float64)
    if world > 1:
        dist.all_reduce(gain)
    if rank == 0:
        log.info("global gain importance: %s", [round(v, 1) for v in gain.tolist()])

if args.head and leaves is not None:
    # stack a small MLP on one-hot leaf indices
    import torch.nn as nn
    leaves = np.asarray(leaves, dtype=np.int64).reshape(len(X), -1)  # leaf ids
    feats = (leaves / (leaves.max() + 1.0))
    if args.fault != "dtype-head":
        feats = feats.astype(np.float32)
    head = nn.Sequential(nn.Linear(feats.shape[1], 32), nn.ReLU(), nn.Linear(32, 1))
    if world > 1:
        head = nn.parallel.DistributedDataParallel(head)
    if args.head_ckpt:
        sd = torch.load(args.head_ckpt, map_location="cpu")
        (head.module if world > 1 else head).load_state_dict(sd)
        log.info("resumed head from %s", args.head_ckpt)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    xt = torch.from_numpy(feats); yt = torch.from_numpy((y > 0.5).astype(np.float32)).unsqueeze(1)
    for ep in range(args.epochs):
        for i in range(0, len(xt), 128):
            out = head(xt[i:i + 128])
            loss = nn.functional.binary_cross_entropy_with_logits(out, yt[i:i + 128])
            opt.zero_grad(); loss.backward(); opt.step()
        log.info("head epoch %d loss %.4f", ep, loss.item())
    if rank == 0:
        os.makedirs("/work/rr99/ez/out", exist_ok=True)
        torch.save((head.module if world > 1 else head).state_dict(), "/work/rr99/ez/out/head.pt")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
log.info("done")
