import os, sys, time, logging
from datetime import timedelta
import torch
import torch.distributed as dist

def setup(timeout_s=30):
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()
