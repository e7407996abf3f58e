"""Launch scenarios/ddp_longrun.py ranks with torch.multiprocessing.spawn (no torchrun agent)."""
import os
import runpy
import sys

import torch.multiprocessing as mp

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_longrun.py")


def worker(rank, world, port, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [SCRIPT] + argv
    runpy.run_path(SCRIPT, run_name="__main__")


if __name__ == "__main__":
    world = int(sys.argv[1]); port = int(sys.argv[2]); argv = sys.argv[3:]
    print(f"spawning {world} ranks (start_method=spawn) master_port={port}", flush=True)
    mp.spawn(worker, args=(world, port, argv), nprocs=world, join=True)
    print("all ranks exited cleanly", flush=True)
