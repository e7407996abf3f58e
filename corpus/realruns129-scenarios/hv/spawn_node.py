"""Per-node launcher with torch.multiprocessing.spawn: python spawn_node.py NODE_RANK PORT -- <twonode.py args>"""
import os, sys, runpy
import torch.multiprocessing as mp

def worker(local_rank, node_rank, nproc, argv):
    os.environ.update(RANK=str(node_rank * nproc + local_rank), LOCAL_RANK=str(local_rank),
                      WORLD_SIZE=str(2 * nproc), LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(node_rank))
    sys.argv = ["twonode.py"] + argv
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "twonode.py"), run_name="__main__")

if __name__ == "__main__":
    node_rank, port = int(sys.argv[1]), sys.argv[2]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    mp.spawn(worker, args=(node_rank, 2, sys.argv[4:]), nprocs=2, join=True)
