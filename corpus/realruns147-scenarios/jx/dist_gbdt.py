"""Distributed GBDT ensemble + DDP head (torch.distributed, gloo).
Each rank fits LightGBM on its own shard, encodes samples by leaf index, trains a DDP MLP on the leaf
one-hot features and all-reduces validation probabilities.
--data DIR  --out DIR  --leaves-from {global,local}  --spawn N (use torch.multiprocessing.spawn)"""
import argparse, os, sys, time, logging
from datetime import timedelta
p = argparse.ArgumentParser()
p.add_argument("--data", default="data")
p.add_argument("--out", default="out_dist")
p.add_argument("--leaf-enc", default="global")
p.add_argument("--rounds", type=int, default=30)
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--early-stop", type=int, default=0)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=47820)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--sleep-rank", type=int, default=-1)
a = p.parse_args()

def main(rank=None, world=None):
    import numpy as np, torch, torch.distributed as dist, torch.nn as nn
    import lightgbm as lgb
    from torch.nn.parallel import DistributedDataParallel as DDP
    if rank is not None:
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank} pid %(process)d] %(levelname)s %(message)s", force=True)
    log = logging.getLogger("ens")
    shard = os.path.join(a.data, f"shard_{rank}.npz")
    log.info("loading %s", shard)
    d = np.load(shard)
    X, y = d["X"], d["y"]
    v = np.load(os.path.join(a.data, "valid.npz"))
    params = dict(objective="binary", num_leaves=15, learning_rate=0.1, verbose=-1, seed=rank,
                  min_data_in_leaf=20 + 15 * rank)
    if a.early_stop:
        dtr, dho = lgb.Dataset(X[:1200], y[:1200]), lgb.Dataset(X[1200:], y[1200:])
        bst = lgb.train(params, dtr, num_boost_round=a.rounds, valid_sets=[dho],
                        callbacks=[lgb.early_stopping(a.early_stop, verbose=True)])
        bst = lgb.Booster(model_str=bst.model_to_string(num_iteration=bst.best_iteration))
    else:
        bst = lgb.train(params, lgb.Dataset(X, y), num_boost_round=a.rounds)
    log.info("lightgbm: %d trees", bst.num_trees())
    leaves = bst.predict(X, pred_leaf=True)                      # (n, trees)
    if a.leaf_enc == "global":
        width = 15 * bst.num_trees()
    else:                                                         # width from the leaves this rank saw
        width = int(sum(leaves[:, t].max() + 1 for t in range(leaves.shape[1])))
    log.info("leaf feature width %d", width)
    def encode(L):
        offs = np.arange(L.shape[1]) * (15 if a.leaf_enc == "global" else 0)
        if a.leaf_enc != "global":
            offs = np.concatenate([[0], np.cumsum([leaves[:, t].max() + 1 for t in range(L.shape[1])])[:-1]])
        F = np.zeros((L.shape[0], width), dtype=np.float32)
        idx = np.clip(L + offs, 0, width - 1).astype(int)
        np.put_along_axis(F, idx, 1.0, axis=1)
        return torch.from_numpy(F)
    F, yt = encode(leaves), torch.from_numpy(y).float()
    torch.manual_seed(0)
    head = nn.Sequential(nn.Linear(width, 32), nn.ReLU(), nn.Linear(32, 1))
    model = DDP(head)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for ep in range(a.epochs):
        if rank == a.sleep_rank and ep == 2:
            log.info("epoch %d: slow shard refresh", ep)
            time.sleep(3600)
        tot = 0.0
        for i in range(0, len(F), 100):
            opt.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(model(F[i:i+100])[:, 0], yt[i:i+100])
            loss.backward(); opt.step(); tot += loss.item()
        log.info("epoch %d loss %.4f", ep, tot / (len(F) / 100))
    with torch.no_grad():
        pv = torch.sigmoid(model.module(encode(bst.predict(v["X"], pred_leaf=True)))[:, 0])
    dist.all_reduce(pv); pv /= world
    acc = ((pv > 0.5).long().numpy() == v["y"]).mean()
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        bst.save_model(os.path.join(a.out, "lgb_rank0.txt"))
        torch.save(model.module.state_dict(), os.path.join(a.out, "head.pt"))
        log.info("ensemble valid acc %.4f, saved to %s", acc, a.out)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(a.spawn,), nprocs=a.spawn)
    else:
        main()
