"""Tabular DDP training: sklearn preprocessing feeding a torch MLP trained with DDP (gloo).
Faults are selected with --fault; --fault-rank picks the rank whose data/behaviour is broken."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
import joblib

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps-per-epoch", type=int, default=20)
p.add_argument("--workdir", default="/work/rr125/hk/work/tab")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="launch N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", default="46073")
args = p.parse_args()

def make_frame(n, seed, rare_category=True):
    rng = np.random.default_rng(seed)
    cats = ["north", "south", "east", "west"] + (["island"] if rare_category else [])
    region = rng.choice(cats, size=n)
    num = rng.normal(size=(n, 6)).astype(np.float32)
    y = (num[:, 0] + 0.5 * num[:, 1] + (region == "north") > 0.3).astype(np.int64)
    return region.reshape(-1, 1), num, y

def main():
    rank_env = int(os.environ.get("RANK", "0"))
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank_env}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("tabddp")
    out = (log.info if args.use_logging else (lambda m: print(m, flush=True)))
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    os.makedirs(args.workdir, exist_ok=True)
    # every rank reads its own shard of the table
    n = 512
    region, num, y = make_frame(n, seed=100 + rank,
                                rare_category=not (args.fault == "ohe-mismatch" and rank == args.fault_rank))
    if args.fault == "nan-anomaly" and rank == args.fault_rank:
        # shard written by an upstream job that encodes missing sensor readings as NaN
        miss = np.random.default_rng(7).random(num.shape) < 0.02
        num[miss] = np.nan
    if args.fault == "target-oob":
        # labels exported 1-based from the warehouse ("class_id" 1..K) on the later shards
        y = y + (1 if rank == args.fault_rank else 0)
    scaler_path = os.path.join(args.workdir, "scaler.joblib")
    if args.fault == "scaler-race":
        if rank == 0:
            time.sleep(2.0)  # fitting the scaler on the full table takes a while
            sc = StandardScaler().fit(num)
            joblib.dump(sc, scaler_path)
            out(f"[rank{rank}] fitted scaler, saved to {scaler_path}")
        # BUG: no dist.barrier() here; other ranks load before rank 0 finished writing
        sc = joblib.load(scaler_path)
        num = sc.transform(num).astype(np.float32)
        enc_region = OneHotEncoder(sparse_output=False).fit_transform(region).astype(np.float32)
        X = np.concatenate([enc_region, num], axis=1)
    else:
        # BUG (for ohe-mismatch): encoder is fitted per rank on the local shard
        ct = ColumnTransformer([("cat", OneHotEncoder(sparse_output=False, handle_unknown="ignore"), [0])],
                               remainder="passthrough")
        X = np.asarray(ct.fit_transform(np.concatenate([region, num.astype(object)], axis=1)), dtype=np.float32)
        if args.fault != "nan-anomaly":
            X = StandardScaler().fit_transform(X).astype(np.float32)
    in_dim = X.shape[1]
    out(f"[rank{rank}/{world}] shard rows={len(X)} features={in_dim} positives={int((y>0).sum())}")
    n_classes = 2
    model = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, n_classes))
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    if args.fault == "nan-anomaly":
        torch.autograd.set_detect_anomaly(True)
    if args.fault == "monitored-barrier" and rank == args.fault_rank:
        # this rank re-runs a feature-selection grid search before training
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC
        Xb = np.tile(X, (12, 1)); yb = np.tile(y, 12)
        out(f"[rank{rank}] running feature-selection grid search before epoch 0 ...")
        GridSearchCV(SVC(), {"C": [0.1, 1, 10, 100, 1000], "gamma": ["scale", 0.01, 0.1, 1.0, 3.0]}, cv=5).fit(Xb, yb)
    if args.fault == "monitored-barrier":
        out(f"[rank{rank}] waiting at monitored_barrier before training")
        dist.monitored_barrier(timeout=timedelta(seconds=15))
    bs = 32
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    for ep in range(args.epochs):
        perm = torch.randperm(len(Xt), generator=torch.Generator().manual_seed(ep))
        tot = 0.0
        for i in range(args.steps_per_epoch):
            idx = perm[(i * bs) % len(Xt):(i * bs) % len(Xt) + bs]
            xb, yb = Xt[idx], yt[idx]
            loss = loss_fn(ddp(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); step += 1
            if args.fault == "slow":
                time.sleep(0.5)
            if step % 10 == 0:
                out(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}")
        out(f"[rank{rank}] epoch {ep} done mean_loss {tot/args.steps_per_epoch:.4f}")
    if rank == 0:
        ck = os.path.join(args.workdir, "mlp.pt")
        torch.save({"model": model.state_dict(), "in_dim": in_dim}, ck)
        out(f"[rank0] saved {ck}")
    dist.barrier()
    dist.destroy_process_group()
    out(f"[rank{rank}] finished")

def _spawn_entry(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=args.port, RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    main()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
