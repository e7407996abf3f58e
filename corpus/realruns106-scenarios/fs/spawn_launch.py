"""Launch shard_train.py ranks with torch.multiprocessing.spawn (no torchrun)."""
import argparse, os, runpy, sys
import torch.multiprocessing as mp

def worker(local_rank, world, port, train_args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank),
                      LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world))
    sys.argv = ["shard_train.py"] + train_args
    runpy.run_path(os.path.join(os.path.dirname(__file__), "shard_train.py"), run_name="__main__")

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=43150)
    a, rest = p.parse_known_args()
    print(f"spawning {a.nprocs} workers on port {a.port}", flush=True)
    mp.spawn(worker, args=(a.nprocs, a.port, rest), nprocs=a.nprocs, join=True)
