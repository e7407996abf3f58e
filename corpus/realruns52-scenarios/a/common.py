import os, sys, logging
from datetime import timedelta
import torch
import torch.distributed as dist

def setup(rank=None, world=None, port=None, timeout=20):
    if rank is not None:  # mp.spawn path
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=timeout))
        return rank, world
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()

def get_logger(rank):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s", stream=sys.stdout, force=True)
    return logging.getLogger("train")
