"""torch.multiprocessing.spawn launcher: runs scenarios/ddp_train.py in N ranks."""
import os, sys, runpy
import torch.multiprocessing as mp
def worker(rank, world, port, argv):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = ["ddp_train.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "ddp_train.py"), run_name="__main__")
if __name__ == "__main__":
    world, port = int(sys.argv[1]), int(sys.argv[2])
    mp.spawn(worker, args=(world, port, sys.argv[3:]), nprocs=world, join=True)
