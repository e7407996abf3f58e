"""Launch a training script on N local ranks with torch.multiprocessing.spawn (no torchrun)."""
import os
import runpy
import sys

import torch.multiprocessing as mp


def worker(rank, world, script, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29770"))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    world = int(sys.argv[1])
    mp.spawn(worker, args=(world, sys.argv[2], sys.argv[3:]), nprocs=world, join=True)
