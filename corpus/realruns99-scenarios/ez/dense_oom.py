"""Build a dense design matrix (one-hot of high-cardinality ids x interactions) and fit a booster."""
import argparse, logging, numpy as np
p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=200000)
p.add_argument("--ids", type=int, default=5000)
p.add_argument("--where", default="numpy", choices=["numpy", "xgb"])
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
rng = np.random.default_rng(0)
ids = rng.integers(0, args.ids, size=args.rows)
num = rng.normal(size=(args.rows, 8)).astype(np.float32)
y = (num[:, 0] > 0).astype(np.float32)
logging.info("rows=%d ids=%d -> dense one-hot %.1f GiB", args.rows, args.ids, args.rows * args.ids * 4 / 2**30)
if args.where == "numpy":
    onehot = np.zeros((args.rows, args.ids), dtype=np.float32)
    onehot[np.arange(args.rows), ids] = 1.0
    X = np.hstack([num, onehot])
else:
    import xgboost as xgb
    X = np.hstack([num, (ids % 97)[:, None].astype(np.float32)])
    dtr = xgb.QuantileDMatrix(X, label=y, max_bin=256)
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 16, "nthread": 1, "grow_policy": "lossguide", "max_leaves": 0}, dtr, 50, evals=[(dtr, "train")], verbose_eval=5)
logging.info("matrix %s ready", X.shape)
