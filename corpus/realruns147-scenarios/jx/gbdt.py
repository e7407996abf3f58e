"""Gradient-boosting trainers (XGBoost / LightGBM / CatBoost) with callbacks and early stopping.
--lib {xgb,lgb,cat} --fault {none,noval,labels,savedir,traindir}"""
import argparse, os, sys, logging
p = argparse.ArgumentParser()
p.add_argument("--lib", default="lgb")
p.add_argument("--fault", default="none")
p.add_argument("--rounds", type=int, default=200)
p.add_argument("--out", default="models")
p.add_argument("--train-dir", default="catboost_info")
p.add_argument("--classes", type=int, default=4)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("gbdt")
import numpy as np
rng = np.random.default_rng(7)
N, D, K = 4000, 12, a.classes
X = rng.normal(size=(N, D))
X[:, 10] = rng.integers(0, 3, size=N)       # low-cardinality column
X[:, 11] = 1.0                               # constant column
y = np.argmax(X[:, :K] + 0.5 * rng.normal(size=(N, K)), axis=1)
if a.fault == "labels":
    y = y + 1          # labels 1..K as exported from the labelling tool
Xtr, ytr, Xva, yva = X[:3200], y[:3200], X[3200:], y[3200:]
log.info("train %s valid %s classes %s", Xtr.shape, Xva.shape, sorted(set(y.tolist())))
if a.lib == "lgb":
    import lightgbm as lgb
    params = dict(objective="multiclass", num_class=K, learning_rate=0.1, num_leaves=63,
                  min_data_in_leaf=400, min_sum_hessian_in_leaf=1.0, verbose=1)
    dtr = lgb.Dataset(Xtr, ytr)
    dva = lgb.Dataset(Xva, yva, reference=dtr)
    valid = [] if a.fault == "noval" else [dva]
    bst = lgb.train(params, dtr, num_boost_round=a.rounds, valid_sets=valid,
                    callbacks=[lgb.early_stopping(20), lgb.log_evaluation(20)])
    log.info("best iteration %s", bst.best_iteration)
    os.makedirs(a.out, exist_ok=True)
    bst.save_model(os.path.join(a.out, "lgb.txt"))
elif a.lib == "xgb":
    import xgboost as xgb
    params = dict(objective="multi:softprob", num_class=K, eta=0.1, max_depth=6,
                  n_estimators=a.rounds, eval_metric="mlogloss", tree_method="hist")
    dtr = xgb.DMatrix(Xtr, label=ytr)
    dva = xgb.DMatrix(Xva, label=yva)
    bst = xgb.train(params, dtr, num_boost_round=a.rounds, evals=[(dtr, "train"), (dva, "valid")],
                    early_stopping_rounds=15, verbose_eval=20)
    log.info("best iteration %s best score %s", bst.best_iteration, bst.best_score)
    if a.fault != "savedir":
        os.makedirs(a.out, exist_ok=True)
    bst.save_model(os.path.join(a.out, "xgb.ubj"))
elif a.lib == "cat":
    from catboost import CatBoostClassifier, Pool
    m = CatBoostClassifier(iterations=a.rounds, learning_rate=0.1, depth=6, loss_function="MultiClass",
                           train_dir=a.train_dir, od_type="Iter", od_wait=20, verbose=25,
                           thread_count=1)
    m.fit(Pool(Xtr, ytr), eval_set=Pool(Xva, yva), use_best_model=True)
    log.info("best iteration %s", m.get_best_iteration())
    os.makedirs(a.out, exist_ok=True)
    m.save_model(os.path.join(a.out, "cat.cbm"))
log.info("saved model to %s", a.out)
