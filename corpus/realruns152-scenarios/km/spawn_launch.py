"""Launch scenarios/ddp_shards.py with torch.multiprocessing.spawn instead of torchrun.

usage: python scenarios/spawn_launch.py --nprocs N --port P [--hook-lambda] -- <ddp_shards args>
"""
import os, runpy, sys
import torch.multiprocessing as mp


def worker(local_rank, nprocs, port, argv, on_step=None):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank),
                      LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs))
    sys.argv = ["ddp_shards.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(__file__), "ddp_shards.py"), run_name="__main__")


if __name__ == "__main__":
    a = sys.argv[1:]
    sep = a.index("--") if "--" in a else len(a)
    own, rest = a[:sep], a[sep + 1:]
    nprocs = int(own[own.index("--nprocs") + 1])
    port = int(own[own.index("--port") + 1])
    hook = None
    if "--hook-lambda" in own:
        hook = lambda step, loss: print(f"step {step}: {loss:.4f}")  # progress callback
    mp.spawn(worker, args=(nprocs, port, rest) + ((hook,) if hook else ()), nprocs=nprocs, join=True)
