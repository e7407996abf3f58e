"""Launch a training script in N processes with torch.multiprocessing.spawn.
usage: python spawn_launch.py --nprocs N --port P script.py [script args]"""
import os, sys, runpy, argparse
import torch.multiprocessing as mp

def _run(local_rank, nprocs, port, script, argv, worker_start):
    if worker_start != "inherit":
        import multiprocessing
        multiprocessing.set_start_method(worker_start, force=True)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank),
                      LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs))
    sys.argv = [script] + argv
    runpy.run_path(script, run_name="__main__")

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=30760)
    p.add_argument("--worker-start", default="inherit", help="start method for DataLoader workers inside ranks")
    p.add_argument("script")
    a, rest = p.parse_known_args()
    mp.spawn(_run, args=(a.nprocs, a.port, a.script, rest, a.worker_start), nprocs=a.nprocs, join=True)
