"""torch.multiprocessing.spawn launcher for handrank_train.py (sets RANK/WORLD_SIZE per process)."""
import os, sys, runpy
import torch.multiprocessing as mp
def worker(i, world, argv):
    os.environ.update(RANK=str(i), WORLD_SIZE=str(world), LOCAL_RANK=str(i))
    sys.argv = ["handrank_train.py"] + argv
    runpy.run_path("/work/rr59/x/scenarios/handrank_train.py", run_name="__main__")
if __name__ == "__main__":
    world = int(sys.argv[1]); os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = sys.argv[2]
    mp.spawn(worker, args=(world, sys.argv[3:]), nprocs=world, join=True)
