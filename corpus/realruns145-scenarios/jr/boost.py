"""Gradient boosting (XGBoost / LightGBM / CatBoost) with callbacks, custom objectives and early stopping."""
import argparse, os, logging
p = argparse.ArgumentParser()
p.add_argument("--lib", required=True, choices=["xgb", "lgb", "cat"])
p.add_argument("--fault", default="none", choices=["none", "obj_shape", "nosplit", "train_dir", "es_noeval", "cb_metric"])
p.add_argument("--rounds", type=int, default=200)
p.add_argument("--outdir", default="out/boost")
p.add_argument("--traindir", default=None)
a = p.parse_args()
import numpy as np
rng = np.random.default_rng(0)
N = 2000
X = rng.normal(size=(N, 12)).astype(np.float32)
y = (X[:, 0] * 2 - X[:, 1] + 0.5 * rng.normal(size=N) > 0).astype(np.float32)
Xtr, ytr, Xva, yva = X[:1600], y[:1600], X[1600:], y[1600:]
os.makedirs(a.outdir, exist_ok=True)

if a.lib == "xgb":
    import xgboost as xgb
    print("xgboost", xgb.__version__, flush=True)
    dtr = xgb.DMatrix(Xtr, label=ytr); dva = xgb.DMatrix(Xva, label=yva)
    def logistic_obj(preds, dtrain):
        labels = dtrain.get_label()
        p = 1.0 / (1.0 + np.exp(-preds))
        grad = p - labels
        hess = p * (1.0 - p)
        if a.fault == "obj_shape":
            # per-class layout left over from the multiclass version of this objective
            return grad.reshape(-1, 1).repeat(2, axis=1), hess.reshape(-1, 1).repeat(2, axis=1)
        return grad, hess
    class Log(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            if epoch % 20 == 0:
                print(f"[cb] iter {epoch} val logloss {evals_log['val']['logloss'][-1]:.4f}", flush=True)
            return False
    bst = xgb.train({"max_depth": 4, "eta": 0.1, "eval_metric": "logloss", "base_score": 0.5}, dtr, a.rounds,
                    evals=[(dtr, "train"), (dva, "val")], obj=logistic_obj, early_stopping_rounds=15,
                    callbacks=[Log()], verbose_eval=25)
    print("best iteration", bst.best_iteration, flush=True)
elif a.lib == "lgb":
    import lightgbm as lgb
    print("lightgbm", lgb.__version__, flush=True)
    params = {"objective": "binary", "learning_rate": 0.1, "num_leaves": 31, "verbose": 1}
    if a.fault == "nosplit":
        params.update(min_data_in_leaf=400, num_leaves=63)
    dtr = lgb.Dataset(Xtr, ytr); dva = lgb.Dataset(Xva, yva, reference=dtr)
    valid = [dva] if a.fault != "es_noeval" else []
    bst = lgb.train(params, dtr, a.rounds, valid_sets=valid,
                    callbacks=[lgb.early_stopping(20), lgb.log_evaluation(25)])
    bst.save_model(os.path.join(a.outdir, "lgb.txt"))
    print("best iteration", bst.best_iteration, flush=True)
else:
    from catboost import CatBoostClassifier
    import catboost
    print("catboost", catboost.__version__, flush=True)
    m = CatBoostClassifier(iterations=a.rounds, depth=4, learning_rate=0.1, verbose=25,
                           train_dir=os.path.join(a.traindir or a.outdir, "catboost_info"), early_stopping_rounds=20,
                           eval_metric="AUC" if a.fault != "cb_metric" else "AUCC")
    m.fit(Xtr, ytr, eval_set=(Xva, yva))
    m.save_model(os.path.join(a.outdir, "cat.cbm"))
    print("best iteration", m.get_best_iteration(), flush=True)
