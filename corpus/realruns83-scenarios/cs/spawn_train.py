"""Launch ddp_train.py with torch.multiprocessing.spawn instead of torchrun."""
import os, sys, runpy, torch.multiprocessing as mp
HERE = os.path.dirname(os.path.abspath(__file__))
def worker(rank, world, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "37070"))
    sys.argv = [os.path.join(HERE, "ddp_train.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")
if __name__ == "__main__":
    world = int(os.environ.get("NPROCS", "2"))
    mp.spawn(worker, args=(world, sys.argv[1:]), nprocs=world, join=True)
