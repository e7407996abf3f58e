"""Feature-precompute + training script; run under `ulimit -v` to cap address space.
--mode torch: materialises a full pairwise-similarity matrix with torch
--mode numpy: builds a dense one-hot design matrix with numpy"""
import argparse, logging, time
import numpy as np, torch, torch.nn as nn
p = argparse.ArgumentParser(); p.add_argument("--mode", default="torch"); p.add_argument("--n", type=int, default=60000)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger()
emb = torch.randn(args.n, 64)
model = nn.Linear(64, 8); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    idx = torch.randint(0, args.n, (256,))
    loss = model(emb[idx]).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
    log.info("warmup step %d loss %.4f", step, loss.item())
log.info("computing hard-negative table for %d items", args.n)
if args.mode == "torch":
    sim = emb @ emb.T                      # n x n float32
    hard = sim.topk(8, dim=1).indices
else:
    tokens = np.random.randint(0, 30000, size=args.n)
    onehot = np.zeros((args.n, 30000), dtype=np.float64)
    onehot[np.arange(args.n), tokens] = 1
log.info("done")
