"""XGBoost regressor on a table built by joining features with a label table.

--fault left_join : a left join leaves customers without a label row (label NaN)
"""
import argparse
import logging

import numpy as np
import pandas as pd
import xgboost as xgb

p = argparse.ArgumentParser()
p.add_argument("--fault", default="left_join", choices=["none", "left_join"])
p.add_argument("--rounds", type=int, default=50)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(module)s] %(message)s")
log = logging.getLogger(__name__)

rng = np.random.default_rng(0)
feats = pd.DataFrame({"customer_id": np.arange(5000), **{f"f{i}": rng.normal(size=5000) for i in range(8)}})
labels = pd.DataFrame({"customer_id": np.arange(5000), "spend": rng.gamma(2.0, 50.0, size=5000)})
if args.fault == "left_join":
    labels = labels.sample(frac=0.97, random_state=1)  # late-arriving label partition missing
df = feats.merge(labels, on="customer_id", how="left")
log.info("joined table: %d rows, %d columns", *df.shape)
tr, va = df.iloc[:4000], df.iloc[4000:]
cols = [c for c in df.columns if c.startswith("f")]
dtr = xgb.DMatrix(tr[cols], label=tr["spend"])
dva = xgb.DMatrix(va[cols], label=va["spend"])
log.info("starting training: %d rounds", args.rounds)
bst = xgb.train({"objective": "reg:squarederror", "eta": 0.1, "max_depth": 4, "nthread": 1},
                dtr, args.rounds, evals=[(dtr, "train"), (dva, "valid")], verbose_eval=10)
log.info("best iteration %s", bst.best_iteration if hasattr(bst, "best_iteration") else "-")
