"""torch.multiprocessing.spawn trainer with python-json-logger output.
--fault pg-twice : Trainer.__init__ calls setup_distributed() again after the worker already did."""
import argparse, logging, os, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp

def get_logger(rank):
    from pythonjsonlogger.json import JsonFormatter
    lg = logging.getLogger(f"train.r{rank}")
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(process)d %(message)s", static_fields={"rank": rank, "service": "kd-trainer"}))
    lg.handlers[:] = [h]; lg.setLevel(logging.INFO); lg.propagate = False
    return lg

def setup_distributed(rank, world, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))

class Trainer:
    def __init__(self, rank, world, a, log):
        self.rank, self.log = rank, log
        if a.fault == "pg-twice":
            setup_distributed(rank, world, a.port)   # "make Trainer usable standalone"
        self.model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
    def fit(self, steps):
        for s in range(steps):
            x = torch.randn(16, 16); y = (x[:, 0] > 0).long()
            loss = F.cross_entropy(self.model(x), y)
            self.opt.zero_grad(); loss.backward(); self.opt.step()
            if s % 2 == 0:
                self.log.info("step", extra={"step": s, "loss": round(loss.item(), 4)})

def worker(rank, world, a):
    log = get_logger(rank)
    try:
        setup_distributed(rank, world, a.port)
        log.info("process group ready", extra={"world_size": world, "backend": dist.get_backend()})
        Trainer(rank, world, a, log).fit(a.steps)
        dist.barrier()
        log.info("finished")
        dist.destroy_process_group()
    except Exception:
        log.exception("worker crashed")
        raise

if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--port", type=int, default=48120)
    p.add_argument("--steps", type=int, default=6); p.add_argument("--nprocs", type=int, default=2)
    a = p.parse_args()
    mp.spawn(worker, args=(a.nprocs, a), nprocs=a.nprocs)
