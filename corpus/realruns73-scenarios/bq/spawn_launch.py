"""Launch a training script on N local ranks with torch.multiprocessing.spawn (no torchrun)."""
import os
import runpy
import sys

import torch.multiprocessing as mp


def _worker(local_rank, world, port, script, argv):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    world, port, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    mp.spawn(_worker, args=(world, port, script, sys.argv[4:]), nprocs=world, join=True)
