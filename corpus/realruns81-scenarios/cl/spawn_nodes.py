"""Launch one 'node' of ddp_nodes.py with torch.multiprocessing.spawn (no torchrun).
usage: spawn_nodes.py --nnodes 2 --node-rank R --nproc 1 --master-port P -- <ddp_nodes args>"""
import argparse, os, runpy, sys
import torch.multiprocessing as mp


def worker(local_rank, a, rest):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.master_port),
                      RANK=str(a.node_rank * a.nproc + local_rank), LOCAL_RANK=str(local_rank),
                      WORLD_SIZE=str(a.nnodes * a.nproc), GROUP_RANK=str(a.node_rank))
    sys.argv = [os.path.join(os.path.dirname(__file__), "ddp_nodes.py")] + rest
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nnodes", type=int, default=2); p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--nproc", type=int, default=1); p.add_argument("--master-port", type=int, default=29500)
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    mp.spawn(worker, args=(a, rest), nprocs=a.nproc, join=True)
