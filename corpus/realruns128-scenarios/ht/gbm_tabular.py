"""LightGBM regression on a small synthetic tabular set built by joining two 'tables'.

--fault none       healthy run (LightGBM prints its usual 'No further splits' warnings)
--fault nanjoin    target column comes from a left join; unmatched keys leave NaN targets
--fault inftarget  target log-transformed with np.log(y) where some prices are 0 -> -inf
--fault dupcol     (healthy) duplicate constant columns -> alarming warnings only
"""
import argparse
import numpy as np
import lightgbm as lgb

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rounds", type=int, default=60)
p.add_argument("--period", type=int, default=10)
args = p.parse_args()

rng = np.random.default_rng(0)
n = 1200
X = rng.normal(size=(n, 8))
price = np.maximum(0.0, 3 + X[:, 0] * 2 - X[:, 1] + rng.normal(scale=0.7, size=n))
keys = np.arange(n)
if args.fault == "nanjoin":
    # price table only covers ids < 1150; a left join leaves NaN for the rest
    table = dict(zip(keys[:1150], price[:1150]))
    y = np.array([table.get(k, np.nan) for k in keys[rng.permutation(n)]])
elif args.fault == "inftarget":
    y = np.log(price)  # log-price; some prices are exactly 0
else:
    y = price
if args.fault == "dupcol":
    X = np.hstack([X, np.ones((n, 3)), X[:, :2]])
    y = price

print(f"train rows: {n - 300}, valid rows: 300, features: {X.shape[1]}")
print(f"target stats: mean={np.mean(y):.4f} min={np.min(y):.4f} max={np.max(y):.4f}")
dtr = lgb.Dataset(X[:-300], y[:-300])
dva = lgb.Dataset(X[-300:], y[-300:], reference=dtr)
params = dict(objective="regression", metric="l2", learning_rate=0.1, num_leaves=63 if args.fault == "dupcol" else 15,
              min_data_in_leaf=40, verbose=1 if args.fault == "dupcol" else -1, min_gain_to_split=0.0, num_threads=1)
bst = lgb.train(params, dtr, num_boost_round=args.rounds, valid_sets=[dva],
                callbacks=[lgb.log_evaluation(args.period)])
pred = bst.predict(X[-300:])
print(f"best_iteration={bst.best_iteration} final valid l2={np.mean((pred - y[-300:]) ** 2):.5f}")
bst.save_model("/work/rr128/ht/work_dirs/gbm_model.txt")
print("model saved")
