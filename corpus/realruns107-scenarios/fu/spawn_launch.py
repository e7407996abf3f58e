"""Launch an HF training script on N CPU processes with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, runpy
import torch.multiprocessing as mp

def worker(local_rank, nprocs, port, script, argv):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs),
                      LOCAL_WORLD_SIZE=str(nprocs), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")

if __name__ == "__main__":
    nprocs, port, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    mp.spawn(worker, args=(nprocs, port, script, sys.argv[4:]), nprocs=nprocs, join=True)
