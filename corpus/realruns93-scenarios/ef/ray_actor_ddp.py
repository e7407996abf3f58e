"""Hand-rolled DDP inside ray.remote actors (one actor per rank, gloo over tcp://)."""
import argparse
import logging
import os
from datetime import timedelta

import ray
import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--actors", type=int, default=2)
p.add_argument("--world-size", type=int, default=0, help="defaults to --actors")
p.add_argument("--port", type=int, default=40160)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

FMT = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"
logging.basicConfig(level=logging.INFO, format=FMT)


@ray.remote(num_cpus=1)
class DDPRank:
    def __init__(self, rank, world_size, port):
        logging.basicConfig(level=logging.INFO, format=FMT)
        self.log = logging.getLogger(f"ddp.rank{rank}")
        self.rank, self.ws = rank, world_size
        self.log.info("init_process_group(gloo, tcp://127.0.0.1:%d, rank=%d, world_size=%d)", port, rank, world_size)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size, timeout=timedelta(seconds=30))
        torch.manual_seed(0)
        self.model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)

    def train(self, steps):
        g = torch.Generator().manual_seed(self.rank)
        for s in range(steps):
            x = torch.randn(32, 16, generator=g)
            loss = ((self.model(x) - x[:, :1]) ** 2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if self.rank == 0:
                self.log.info("step %d loss %.4f", s, loss.item())
        dist.destroy_process_group()
        return loss.item()


def main():
    ws = args.world_size or args.actors
    ray.init(num_cpus=args.actors, include_dashboard=False)
    log = logging.getLogger("driver")
    log.info("starting %d rank actors, world_size=%d", args.actors, ws)
    actors = [DDPRank.remote(r, ws, args.port) for r in range(args.actors)]
    out = ray.get([a.train.remote(args.steps) for a in actors])
    log.info("final losses %s", out)
    ray.shutdown()


if __name__ == "__main__":
    main()
