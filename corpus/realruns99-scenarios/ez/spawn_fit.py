"""torch.multiprocessing.spawn: each worker fits a booster on its shard, results gathered over gloo."""
import argparse, os, sys, logging
from datetime import timedelta
import numpy as np
import torch, torch.distributed as dist, torch.multiprocessing as mp
p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--port", default="42160")
p.add_argument("--metrics-file", default="/work/rr99/ez/out/metrics.tsv")

def worker(rank, world, port, sink):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    import xgboost as xgb
    d = np.load(f"/work/rr99/ez/data/shard_{rank:02d}.npz")
    bst = xgb.train({"objective": "binary:logistic", "nthread": 1, "max_depth": 3}, xgb.DMatrix(d["X"], label=d["y"]), 10)
    acc = float(((bst.predict(xgb.DMatrix(d["X"])) > 0.5) == d["y"]).mean())
    t = torch.tensor([acc]); dist.all_reduce(t)
    if rank == 0:
        print(f"mean train acc {t.item() / world:.4f}", flush=True)
        if sink is not None: sink.write(f"acc\t{t.item() / world}\n")
    dist.destroy_process_group()

if __name__ == "__main__":
    args = p.parse_args()
    os.makedirs(os.path.dirname(args.metrics_file), exist_ok=True)
    sink = open(args.metrics_file, "a") if args.fault == "pass-filehandle" else None
    mp.spawn(worker, args=(args.world, args.port, sink), nprocs=args.world, join=True)
    print("all workers finished")
