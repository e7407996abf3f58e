"""Plain Ray actors that each run one rank of a gloo DDP job (no Ray Train).

--fault selects the problem, --rank which rank, --step when.
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import ray
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@ray.remote(num_cpus=1, max_restarts=0)
class RankWorker:
    def __init__(self, rank, world, port, cfg):
        self.rank, self.world, self.cfg = rank, world, cfg
        if cfg.get("data_dir"):
            shard = os.path.join(cfg["data_dir"], f"shard-{rank:05d}.pt")
            self.data = torch.load(shard)
            print(f"[rank {rank}] loaded {shard}: {tuple(self.data.shape)}", flush=True)
        else:
            g = torch.Generator().manual_seed(rank)
            self.data = torch.randn(256, 16, generator=g)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=cfg["timeout"]))
        torch.manual_seed(0)
        self.model = nn.parallel.DistributedDataParallel(
            nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
        print(f"[rank {rank}] process group up (world={world}, backend={dist.get_backend()})", flush=True)

    def pid(self):
        return os.getpid()

    def train(self, steps):
        cfg = self.cfg
        me = self.rank == cfg["frank"]
        hoard = []
        for step in range(steps):
            x = self.data[(step * 32) % 256:(step * 32) % 256 + 32]
            y = x.sum(dim=1, keepdim=True)
            loss = F.mse_loss(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if cfg["fault"] == "mem" and me and step >= cfg["step"]:
                # keeps every step's activations for "later analysis"
                for _ in range(8):
                    hoard.append(torch.ones(128 * 1024 * 1024 // 4))
                print(f"[rank {self.rank}] step {step}: kept {len(hoard) * 128} MiB of activations", flush=True)
            print(f"[rank {self.rank}] step {step} loss {loss.item():.4f}", flush=True)
            time.sleep(cfg["sleep"])
        dist.barrier()
        dist.destroy_process_group()
        return loss.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--step", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--port", type=int, default=37860)
    p.add_argument("--data-dir", default="")
    p.add_argument("--sleep", type=float, default=0.5)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--cpus", type=float, default=1)
    p.add_argument("--pg-timeout", type=float, default=40)
    p.add_argument("--address", default=None)
    a = p.parse_args()
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=2, include_dashboard=False)
    cfg = dict(fault=a.fault, frank=a.rank, step=a.step, timeout=a.timeout, sleep=a.sleep, data_dir=a.data_dir)
    world = 2
    if a.fault == "pg":
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
        # one bundle per rank: 2 CPUs each for torch intra-op threads
        pg = placement_group([{"CPU": a.cpus}] * world, strategy="STRICT_PACK")
        print(f"waiting for placement group {pg.id.hex()} ({world} x {a.cpus} CPU) ...", flush=True)
        ray.get(pg.ready(), timeout=a.pg_timeout)
        opts = lambda r: dict(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=r))
    else:
        opts = lambda r: {}
    actors = [RankWorker.options(**opts(r)).remote(r, world, a.port, cfg) for r in range(world)]
    pids = ray.get([w.pid.remote() for w in actors])
    print("rank pids:", pids, flush=True)
    with open("/tmp/dg_rank_pids.txt", "w") as f:
        f.write(" ".join(map(str, pids)))
    losses = ray.get([w.train.remote(a.steps) for w in actors])
    print("final losses:", losses)


if __name__ == "__main__":
    main()
