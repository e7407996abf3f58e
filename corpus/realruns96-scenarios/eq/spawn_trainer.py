"""Launch scenarios/hf_trainer.py in N processes with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, runpy
import torch.multiprocessing as mp

def worker(rank, world, argv):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "41210"))
    sys.argv = [os.path.join(os.path.dirname(__file__), "hf_trainer.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")

if __name__ == "__main__":
    world = int(sys.argv[1])
    mp.spawn(worker, args=(world, sys.argv[2:]), nprocs=world, join=True)
