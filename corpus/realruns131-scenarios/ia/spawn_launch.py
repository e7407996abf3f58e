"""Launch a training script on N local ranks with torch.multiprocessing.spawn.
usage: python scenarios/spawn_launch.py NPROC PORT script.py [script args...]"""
import os, runpy, sys
import torch.multiprocessing as mp


def _worker(rank, world, port, script, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    n, port, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    mp.spawn(_worker, args=(n, port, script, sys.argv[4:]), nprocs=n, join=True)
