import os, sys, time, logging, datetime
import torch, torch.nn as nn, torch.distributed as dist

def setup(use_logging=False):
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    log = None
    if use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train")
        if os.environ.get("TRAIN_LOG_FILE"):  # extra copy of the log on disk (opened with the locale's encoding)
            fh = logging.FileHandler(os.environ["TRAIN_LOG_FILE"].replace("{rank}", str(rank)))
            fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            log.addHandler(fh)
    return rank, world, log

class TinyNet(nn.Module):
    def __init__(self, d=32, h=64, c=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, c))
    def forward(self, x):
        return self.net(x)

def make_model(world):
    torch.manual_seed(0)
    m = TinyNet()
    if world > 1:
        m = nn.parallel.DistributedDataParallel(m)
    return m

def batch(step, rank, bs=16):
    g = torch.Generator().manual_seed(step * 100 + rank)
    x = torch.randn(bs, 32, generator=g)
    y = (x[:, :4].argmax(1))
    return x, y

def say(rank, msg, log=None):
    if log: log.info(msg)
    else: print(f"[rank{rank}] {msg}", flush=True)

def finish():
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
