"""Start JAX worker processes with torch.multiprocessing.spawn (each runs jax_dist.py's training)."""
import os, sys, runpy, argparse
import torch.multiprocessing as mp
def worker(i, n, argv):
    sys.argv = ["jax_dist.py"] + argv + ["--pid", str(i), "--nproc", str(n)]
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_dist.py"), run_name="__main__")
if __name__ == "__main__":
    n = int(sys.argv[1])
    mp.spawn(worker, args=(n, sys.argv[2:]), nprocs=n, join=True)
