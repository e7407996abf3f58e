"""Launch scenarios/amp_loop.py on N ranks with torch.multiprocessing.spawn (no torchrun)."""
import os, runpy, sys
import torch.multiprocessing as mp


def worker(rank, world, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "46374"))
    sys.argv = ["amp_loop.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "amp_loop.py"), run_name="__main__")


if __name__ == "__main__":
    world = int(os.environ.get("NPROCS", "2"))
    mp.spawn(worker, args=(world, sys.argv[1:]), nprocs=world, join=True)
