"""Launch scenarios/ddp_loop.py with torch.multiprocessing.spawn instead of torchrun."""
import os, sys, runpy
import torch.multiprocessing as mp

def worker(rank, world, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "46590"))
    sys.argv = ["ddp_loop.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_loop.py"), run_name="__main__")

if __name__ == "__main__":
    world = int(os.environ.get("NPROCS", "2"))
    print(f"spawning {world} processes with torch.multiprocessing.spawn", flush=True)
    mp.spawn(worker, args=(world, sys.argv[1:]), nprocs=world, join=True)
    print("all processes joined", flush=True)
