"""DDP via torch.multiprocessing.spawn (no launcher); rendezvous settings are written into os.environ by the script."""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

CONFIG = {"master_addr": "127.0.0.1", "master_port": 39130, "nprocs": 2, "steps": 6}


def worker(local_rank, cfg, fault):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{local_rank}] %(levelname)s %(message)s")
    log = logging.getLogger("spawn")
    if fault == "port-int":
        os.environ["MASTER_ADDR"] = cfg["master_addr"]
        os.environ["MASTER_PORT"] = cfg["master_port"]
    else:
        os.environ["MASTER_ADDR"] = cfg["master_addr"]
        os.environ["MASTER_PORT"] = str(cfg["master_port"])
    dist.init_process_group("gloo", rank=local_rank, world_size=cfg["nprocs"], timeout=timedelta(seconds=20))
    log.info("process group up (world=%d)", dist.get_world_size())
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(cfg["steps"]):
        x = torch.randn(32, 8); y = x.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if local_rank == 0:
            log.info("step %d loss %.4f", step, loss.item())
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    a = p.parse_args()
    mp.spawn(worker, args=(CONFIG, a.fault), nprocs=CONFIG["nprocs"], join=True)
