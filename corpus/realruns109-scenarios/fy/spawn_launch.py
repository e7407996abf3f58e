"""Launch a training script on N local ranks with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, runpy
import torch.multiprocessing as mp


def worker(local_rank, world, script, argv):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                      MASTER_ADDR='127.0.0.1', MASTER_PORT=os.environ.get('MASTER_PORT', '43710'))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name='__main__')


if __name__ == '__main__':
    nprocs = int(sys.argv[1]); script = sys.argv[2]
    print(f'spawning {nprocs} processes for {script}', flush=True)
    mp.spawn(worker, args=(nprocs, script, sys.argv[3:]), nprocs=nprocs, join=True)
    print('all processes finished', flush=True)
