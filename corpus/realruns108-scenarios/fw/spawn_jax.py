"""Launch scenarios/jax_dist.py in N local processes with torch.multiprocessing.spawn.

usage: python scenarios/spawn_jax.py --nprocs 2 -- <jax_dist.py args>
"""
import os
import runpy
import sys

import torch.multiprocessing as mp


def worker(i, nprocs, argv):
    os.environ.update(RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE=str(nprocs))
    sys.argv = ["jax_dist.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "jax_dist.py"), run_name="__main__")


if __name__ == "__main__":
    args = sys.argv[1:]
    n = 2
    if args[:1] == ["--nprocs"]:
        n = int(args[1]); args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    print(f"spawning {n} workers: jax_dist.py {' '.join(args)}", flush=True)
    mp.spawn(worker, args=(n, args), nprocs=n, join=True)
    print("all workers finished", flush=True)
