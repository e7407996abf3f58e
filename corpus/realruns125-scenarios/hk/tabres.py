"""Tabular torch jobs that persist sklearn preprocessing alongside torch weights."""
import argparse, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--workdir", default="/work/rr125/hk/work/tabres")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=2)
args = p.parse_args()
import numpy as np, torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from sklearn.preprocessing import StandardScaler, QuantileTransformer
from tqdm import tqdm
torch.set_num_threads(1)
os.makedirs(args.workdir, exist_ok=True)
rng = np.random.default_rng(0)
X = rng.lognormal(size=(4000, 10)).astype(np.float32)
y = (np.log(X[:, 0]) + np.log(X[:, 1]) > 0).astype(np.int64)
ck = os.path.join(args.workdir, "last.pt")

def train(model, opt, Xs, ep0, n_ep):
    Xt, yt = torch.from_numpy(Xs), torch.from_numpy(y)
    for ep in range(ep0, ep0 + n_ep):
        tot = 0.0
        for i in tqdm(range(0, 4000, 100), desc=f"epoch {ep}", leave=True, mininterval=0.5):
            loss = nn.functional.cross_entropy(model(Xt[i:i+100]), yt[i:i+100])
            opt.zero_grad(); loss.backward(); opt.step(); tot += loss.item()
        print(f"epoch {ep} train_loss {tot/40:.4f}", flush=True)

if args.job == "save":
    sc = StandardScaler().fit(X)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    train(model, opt, sc.transform(X).astype(np.float32), 0, args.epochs)
    torch.save({"epoch": args.epochs, "model": model.state_dict(), "optim": opt.state_dict(),
                "scaler": sc, "feature_names": [f"f{i}" for i in range(10)]}, ck)
    print(f"saved checkpoint {ck}", flush=True)

elif args.job == "resume":
    print(f"resuming from {ck}", flush=True)
    state = torch.load(ck, map_location="cpu")
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    model.load_state_dict(state["model"])
    opt = torch.optim.Adam(model.parameters(), 1e-2); opt.load_state_dict(state["optim"])
    train(model, opt, state["scaler"].transform(X).astype(np.float32), state["epoch"], args.epochs)

elif args.job == "loader":
    class RowDataset(Dataset):
        def __init__(self, X, y, transformer):
            self.X, self.y, self.t = X, y, transformer
        def __len__(self): return len(self.X)
        def __getitem__(self, i):
            x = self.t.transform(self.X[i:i+1])[0].astype(np.float32)
            return torch.from_numpy(x), int(self.y[i])
    qt = QuantileTransformer(n_quantiles=200, output_distribution="normal")
    # BUG: the transformer is fitted on the validation rows only in the eval branch; training uses a fresh one
    ds = RowDataset(X, y, qt)
    dl = DataLoader(ds, batch_size=64, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for ep in range(args.epochs):
        for xb, yb in tqdm(dl, desc=f"epoch {ep}"):
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
        print(f"epoch {ep} loss {loss.item():.4f}", flush=True)
else:
    sys.exit("unknown job")
