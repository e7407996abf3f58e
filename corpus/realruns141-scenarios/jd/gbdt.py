"""Gradient-boosting / scikit-learn training jobs (xgboost, lightgbm, catboost, sklearn)."""
import os, sys, time, argparse, warnings
p = argparse.ArgumentParser()
p.add_argument("--job", required=True, choices=["lgb-dist", "lgb-small", "xgb-big", "xgb-gpu-fallback", "cat-cats",
                                                 "sk-grid", "sk-mlp-noisy"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--rows", type=int, default=20000)
p.add_argument("--ports", default="46852,46853")
a = p.parse_args()
import numpy as np
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
rng = np.random.default_rng(rank)

def make(n, d=20):
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y

if a.job == "lgb-dist":
    import lightgbm as lgb
    X, y = make(a.rows)
    ports = [int(x) for x in a.ports.split(",")]
    machines = ",".join(f"127.0.0.1:{pp}" for pp in ports)
    params = dict(objective="binary", tree_learner="data", num_machines=world, machines=machines,
                  local_listen_port=ports[rank], time_out=1, num_threads=1, learning_rate=0.1, num_leaves=15,
                  verbose=1, metric="binary_logloss")
    if a.fault == "wrong-port" and rank == a.fault_rank:
        params["local_listen_port"] = ports[rank] + 7   # stale config: this worker listens on the wrong port
    print(f"[rank {rank}] lightgbm {lgb.__version__} data-parallel with {world} machines: {machines}", flush=True)
    class Die:
        def __call__(self, env):
            if a.fault == "die" and rank == a.fault_rank and env.iteration == 30:
                print(f"[rank {rank}] iteration {env.iteration}: worker lost", flush=True)
                os.kill(os.getpid(), 9)
    ds = lgb.Dataset(X, y)
    bst = lgb.train(params, ds, num_boost_round=80, valid_sets=[ds],
                    callbacks=[lgb.log_evaluation(10), Die()])
    print(f"[rank {rank}] done, {bst.num_trees()} trees", flush=True)

elif a.job == "lgb-small":
    import lightgbm as lgb
    X, y = make(300)
    X[:, 5:] = 0.0  # constant columns from a broken join
    params = dict(objective="binary", learning_rate=0.1, num_leaves=63, min_data_in_leaf=40, verbose=1)
    bst = lgb.train(params, lgb.Dataset(X, y), num_boost_round=40, valid_sets=[lgb.Dataset(X, y)],
                    callbacks=[lgb.log_evaluation(10)])
    print("trained", bst.num_trees(), "trees; train AUC-ish acc",
          float(((bst.predict(X) > 0.5) == y).mean()))

elif a.job in ("xgb-big", "xgb-gpu-fallback"):
    import xgboost as xgb
    X, y = make(a.rows, 50)
    dtrain = xgb.DMatrix(X, label=y)
    params = dict(objective="binary:logistic", eval_metric="logloss", tree_method="hist", max_depth=6, nthread=2)
    if a.job == "xgb-big":
        params.update(max_depth=0, grow_policy="lossguide", max_leaves=0, max_bin=4096)
    if a.job == "xgb-gpu-fallback":
        params.update(device="cuda")
    print("xgboost", xgb.__version__, params, flush=True)
    bst = xgb.train(params, dtrain, num_boost_round=30, evals=[(dtrain, "train")], verbose_eval=5)
    print("best score", bst.eval(dtrain))

elif a.job == "cat-cats":
    import pandas as pd
    from catboost import CatBoostClassifier
    X, y = make(3000, 6)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    df["city"] = rng.choice(["paris", "lyon", "nice"], size=len(df))
    df["plan"] = rng.choice(["a", "b"], size=len(df))
    if a.fault == "nan-cat":
        df.loc[df.sample(frac=0.01, random_state=0).index, "city"] = np.nan   # missing values from a left join
    m = CatBoostClassifier(iterations=60, depth=4, verbose=20, thread_count=2, train_dir="/work/rr141/jd/work/catboost_info")
    m.fit(df, y, cat_features=["city", "plan"])
    print("catboost done, best iteration", m.get_best_iteration())

elif a.job == "sk-grid":
    from sklearn.model_selection import GridSearchCV
    from sklearn.ensemble import RandomForestClassifier
    X, y = make(a.rows)
    g = GridSearchCV(RandomForestClassifier(n_estimators=60, random_state=0),
                     {"max_depth": [4, 8, 12, None], "min_samples_leaf": [1, 5]}, cv=3, n_jobs=2, verbose=3)
    g.fit(X, y)
    print("best", g.best_params_, round(g.best_score_, 4))

elif a.job == "sk-mlp-noisy":
    from sklearn.neural_network import MLPClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = make(4000)
    X[:, 7] = X[:, 7] * 1e6
    lr = LogisticRegression(max_iter=20).fit(X, y)
    print("logreg acc", round(lr.score(X, y), 4))
    mlp = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(32,), max_iter=15, verbose=True, random_state=0))
    mlp.fit(X, y)
    print("mlp acc", round(mlp.score(X, y), 4))
