import os, sys, logging, warnings
from datetime import timedelta
import torch
import torch.distributed as dist


def setup_logging(style):
    rank = int(os.environ.get("RANK", "0"))
    if style == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train")
        return log.info
    def p(msg):
        print(msg, flush=True)
    return p


def init_dist(timeout_s=30):
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) >= 1 and "MASTER_ADDR" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def cleanup():
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
