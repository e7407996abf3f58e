"""Launch scenarios/numerics.py in N ranks with torch.multiprocessing.spawn.
usage: spawn_launch.py NPROCS PORT -- <numerics.py args>"""
import os, sys, runpy
import torch.multiprocessing as mp
def worker(rank, world, port, argv):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = ["numerics.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "numerics.py"), run_name="__main__")
if __name__ == "__main__":
    n, port = int(sys.argv[1]), int(sys.argv[2])
    mp.spawn(worker, args=(n, port, sys.argv[4:]), nprocs=n, join=True)
