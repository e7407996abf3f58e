"""Launch shard_train.py on N local ranks with torch.multiprocessing.spawn."""
import os, sys, runpy
import torch.multiprocessing as mp


def worker(rank, world, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    sys.argv = ["shard_train.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "shard_train.py"), run_name="__main__")


if __name__ == "__main__":
    world = int(sys.argv[1])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "47313")
    print(f"spawning {world} workers", flush=True)
    mp.spawn(worker, args=(world, sys.argv[2:]), nprocs=world, join=True)
