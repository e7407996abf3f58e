"""Start N ranks of a training script with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, runpy
import torch.multiprocessing as mp
def worker(i, n, port, script, argv):
    os.environ.update(RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE=str(n), MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name='__main__')
if __name__ == '__main__':
    n, port, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    mp.spawn(worker, args=(n, port, script, sys.argv[4:]), nprocs=n, join=True)
