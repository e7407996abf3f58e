"""Gradient-boosting training jobs (XGBoost / LightGBM / CatBoost) on a synthetic churn table.
--job selects the job; several of them contain a real bug or run under a resource limit."""
import argparse, os, sys, time, logging, warnings
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--rows", type=int, default=4000)
p.add_argument("--cols", type=int, default=20)
p.add_argument("--rounds", type=int, default=200)
p.add_argument("--workdir", default="/work/rr125/hk/work/gbm")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--legacy-gpu-id", action="store_true", help="old 1.x config that still has gpu_id")
args = p.parse_args()
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("gbm")
def out(m):
    (log.info(m) if args.use_logging else print(m, flush=True))
os.makedirs(args.workdir, exist_ok=True)

def table(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    logit = X[:, 0] - 0.7 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3]
    y = (logit + rng.normal(scale=0.5, size=n) > 0).astype(np.int32)
    return X, y

X, y = table(args.rows, args.cols)
ntr = int(0.8 * len(X))
Xtr, ytr, Xva, yva = X[:ntr], y[:ntr], X[ntr:], y[ntr:]
out(f"loaded churn table: train={Xtr.shape} valid={Xva.shape} pos_rate={ytr.mean():.3f}")

if args.job == "xgb-early-noval":
    import xgboost as xgb
    dtr = xgb.DMatrix(Xtr, label=ytr)
    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 6, "eval_metric": "logloss", "nthread": 2}
    # refactor moved the validation DMatrix into a --with-valid flag that the prod config does not set
    evals = []
    out(f"xgboost {xgb.__version__}: training with early_stopping_rounds=20, evals={evals}")
    bst = xgb.train(params, dtr, num_boost_round=args.rounds, evals=evals, early_stopping_rounds=20, verbose_eval=10)
    out(f"best iteration {bst.best_iteration}")

elif args.job == "lgb-early-noval":
    import lightgbm as lgb
    dtr = lgb.Dataset(Xtr, label=ytr)
    bst = lgb.train({"objective": "binary", "learning_rate": 0.1, "num_leaves": 31, "verbose": 1},
                    dtr, num_boost_round=args.rounds,
                    callbacks=[lgb.early_stopping(20), lgb.log_evaluation(10)])

elif args.job == "xgb-badlabel":
    import xgboost as xgb
    # labels come from a 3-level "churn_status" column (0 stay, 1 churn, 2 paused) but objective is binary
    rng = np.random.default_rng(3)
    ytr3 = ytr.copy(); ytr3[rng.random(len(ytr3)) < 0.05] = 2
    dtr = xgb.DMatrix(Xtr, label=ytr3); dva = xgb.DMatrix(Xva, label=yva)
    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 4, "eval_metric": "auc", "nthread": 2}
    bst = xgb.train(params, dtr, num_boost_round=args.rounds, evals=[(dtr, "train"), (dva, "valid")], verbose_eval=10)

elif args.job == "lgb-featmismatch":
    import lightgbm as lgb
    from tqdm import tqdm
    from sklearn.model_selection import KFold
    models = []
    for fold, (tr, va) in enumerate(tqdm(list(KFold(5, shuffle=True, random_state=0).split(Xtr)), desc="cv folds")):
        m = lgb.LGBMClassifier(n_estimators=60, learning_rate=0.1, num_leaves=15, verbose=-1)
        m.fit(Xtr[tr], ytr[tr], eval_set=[(Xtr[va], ytr[va])])
        models.append(m)
        out(f"fold {fold}: best valid logloss {m.best_score_['valid_0']['binary_logloss']:.4f}")
    m = models[0]
    m.booster_.save_model(os.path.join(args.workdir, "lgb_fold0.txt"))
    # scoring job: the feature store export dropped the deprecated column 'tenure_bucket' (index 7)
    Xscore = np.delete(Xva, 7, axis=1)
    out(f"scoring {Xscore.shape[0]} rows with {Xscore.shape[1]} features")
    booster = lgb.Booster(model_file=os.path.join(args.workdir, "lgb_fold0.txt"))
    pred = booster.predict(Xscore)
    out(f"mean score {pred.mean():.4f}")

elif args.job == "lgb-oom":
    import lightgbm as lgb
    # "bigger is better": wide one-hot expansion of all features before training
    out(f"expanding features: {args.cols} numeric -> one-hot of 256 bins each")
    Xbig = np.zeros((ntr, args.cols * 256), dtype=np.float64)
    out(f"allocated design matrix {Xbig.shape} ({Xbig.nbytes/2**20:.0f} MiB)")
    bins = np.clip(((Xtr + 4) / 8 * 256).astype(int), 0, 255)
    for j in range(args.cols):
        Xbig[np.arange(ntr), j * 256 + bins[:, j]] = 1.0
    dtr = lgb.Dataset(Xbig, label=ytr, params={"max_bin": 255})
    bst = lgb.train({"objective": "binary", "verbose": 1, "num_threads": 2}, dtr, num_boost_round=args.rounds)

elif args.job == "xgb-interrupt":
    import xgboost as xgb
    from tqdm import tqdm
    class TqdmCB(xgb.callback.TrainingCallback):
        def __init__(self, n): self.bar = tqdm(total=n, desc="boosting", unit="round")
        def after_iteration(self, model, epoch, evals_log):
            self.bar.update(1)
            self.bar.set_postfix(valid_logloss=f"{evals_log['valid']['logloss'][-1]:.4f}")
            return False
    dtr = xgb.DMatrix(Xtr, label=ytr); dva = xgb.DMatrix(Xva, label=yva)
    params = {"objective": "binary:logistic", "eta": 0.01, "max_depth": 10, "eval_metric": "logloss", "nthread": 1}
    bst = xgb.train(params, dtr, num_boost_round=args.rounds, evals=[(dva, "valid")], verbose_eval=False,
                    callbacks=[TqdmCB(args.rounds)])

elif args.job == "healthy-warn":
    import xgboost as xgb, lightgbm as lgb
    dtr = xgb.DMatrix(Xtr, label=ytr); dva = xgb.DMatrix(Xva, label=yva)
    # old config keys carried over from an xgboost 1.x project
    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 4, "eval_metric": "logloss",
              "nthread": 2, "tree_method": "hist", "silent": 1, "n_gpus": 0, "predictor": "cpu_predictor"}
    if args.legacy_gpu_id:
        params["gpu_id"] = 0
    bst = xgb.train(params, dtr, num_boost_round=60, evals=[(dtr, "train"), (dva, "valid")], verbose_eval=20)
    out(f"xgb valid logloss at end: {bst.eval(dva)}")
    clf = lgb.LGBMClassifier(n_estimators=80, num_leaves=63, min_child_samples=200, learning_rate=0.05,
                             min_data_in_leaf=200, verbose=1)
    clf.fit(Xtr[:, :4], ytr, eval_set=[(Xva[:, :4], yva)])
    out(f"lgb valid acc {(clf.predict(Xva[:, :4]) == yva).mean():.4f}")

elif args.job == "cat-resume":
    from catboost import CatBoostClassifier
    snap = os.path.join(args.workdir, "cat_snapshot.cbsnapshot")
    m = CatBoostClassifier(iterations=args.rounds, depth=6, learning_rate=0.05, thread_count=2,
                           train_dir=os.path.join(args.workdir, "catboost_info"),
                           save_snapshot=True, snapshot_file=snap, snapshot_interval=1, verbose=25)
    m.fit(Xtr, ytr, eval_set=(Xva, yva))
    out("catboost finished")

elif args.job == "cat-traindir":
    from catboost import CatBoostClassifier, Pool
    cat_cols = [0, 1]
    import pandas as pd
    df = pd.DataFrame(Xtr); df[0] = (df[0] > 0).map({True: "A", False: "B"}); df[1] = (df[1] * 3).round().astype(int).astype(str)
    dv = pd.DataFrame(Xva); dv[0] = (dv[0] > 0).map({True: "A", False: "B"}); dv[1] = (dv[1] * 3).round().astype(int).astype(str)
    m = CatBoostClassifier(iterations=args.rounds, depth=4, thread_count=2, verbose=20,
                           train_dir=os.environ.get("CATBOOST_TRAIN_DIR", "/work/rr125/hk/work/shared_ro/catboost_info"))
    m.fit(Pool(df, ytr, cat_features=cat_cols), eval_set=Pool(dv, yva, cat_features=cat_cols))
    out("catboost finished")
else:
    sys.exit(f"unknown job {args.job}")
