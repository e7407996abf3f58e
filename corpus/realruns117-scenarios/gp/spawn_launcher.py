"""Launch a training script on N local ranks with torch.multiprocessing.spawn
(sets RANK/WORLD_SIZE/MASTER_* the way the cluster wrapper does)."""
import os, sys, runpy
import torch.multiprocessing as mp


def worker(local_rank, world, script, argv, port):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    world = int(sys.argv[1]); port = int(sys.argv[2]); script = sys.argv[3]
    mp.spawn(worker, args=(world, script, sys.argv[4:], port), nprocs=world, join=True)
