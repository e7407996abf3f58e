"""Launch noisy_train.py in N processes with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, runpy
import torch.multiprocessing as mp

def worker(local_rank, world, port, argv):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = ["noisy_train.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "noisy_train.py"), run_name="__main__")

if __name__ == "__main__":
    world = int(sys.argv[1]); port = int(sys.argv[2])
    mp.spawn(worker, args=(world, port, sys.argv[3:]), nprocs=world, join=True)
