import os, sys, time, logging, datetime
import torch
import torch.distributed as dist

def setup(timeout=30):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

def get_logger(name, rank, stamp=False):
    log = logging.getLogger(name)
    h = logging.StreamHandler(sys.stdout)
    if stamp:
        h.setFormatter(logging.Formatter(f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s"))
    else:
        h.setFormatter(logging.Formatter(f"[rank{rank}] %(message)s"))
    log.addHandler(h); log.setLevel(logging.INFO); log.propagate = False
    return log

def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()
