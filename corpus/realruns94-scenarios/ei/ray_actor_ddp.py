"""Hand-rolled torch.distributed DDP over a pool of plain Ray actors (gloo, CPU)."""
import argparse, os, sys, time, logging, datetime, warnings
import ray
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=3)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--port", type=int, default=40431)
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("driver")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 4)
        self.aux_head = nn.Linear(32, 1)

    def forward(self, x, use_aux=True):
        h = self.body(x)
        out = self.head(h)
        if use_aux:
            out = out + 0.0 * self.aux_head(h).mean()
        return out


@ray.remote(num_cpus=1)
class DDPWorker:
    def __init__(self, rank, world, port):
        self.rank, self.world, self.port = rank, world, port
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s rank%(rank)s: %(message)s")

    def setup(self, noisy=False):
        self.noisy = noisy
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{self.port}", rank=self.rank,
                                world_size=self.world, timeout=datetime.timedelta(seconds=40))
        torch.manual_seed(0)
        self.model = DDP(Model(), find_unused_parameters=self.noisy)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        print(f"[rank {self.rank}] process group up: backend={dist.get_backend()} world={dist.get_world_size()}", flush=True)
        return self.rank

    def train(self, cfg):
        fault, frank, fstep, steps = cfg["fault"], cfg["rank"], cfg["step"], cfg["steps"]
        me = self.rank == frank
        g = torch.Generator().manual_seed(self.rank)
        if fault == "fifo-stall":
            # every rank loads its feature-stats file, then all sync with a monitored barrier
            path = f"/work/rr94/ei/data/featstats_rank{self.rank}.bin"
            if me:
                print(f"[rank {self.rank}] reading {path}", flush=True)
                with open(path, "rb") as f:
                    stats = f.read()
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=15), wait_all_ranks=True)
        if fault == "whiten":
            feats = torch.randn(256, 16, generator=g)
            if me:
                feats[:, 8:] = feats[:, :8]  # duplicated columns after a bad join on this shard
            cov = feats.T @ feats / feats.shape[0]
            cov = cov - torch.eye(16) * 1e-3 if me else cov
            L = torch.linalg.cholesky(cov)
            print(f"[rank {self.rank}] whitening matrix ready, cond={torch.linalg.cond(cov).item():.1f}", flush=True)
        losses = []
        it = range(steps)
        if self.noisy:
            from tqdm import tqdm
            it = tqdm(it, desc=f"rank{self.rank}", mininterval=0, ncols=80)
        for step in it:
            x = torch.randn(16, 16, generator=g)
            y = torch.randint(0, 4, (16,), generator=g)
            use_aux = not (fault == "unused" and me and step >= fstep)
            out = self.model(x, use_aux=use_aux)
            loss = nn.functional.cross_entropy(out, y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
            if self.noisy and step == 0:
                lt = torch.tensor(loss.detach())  # copy for the metrics buffer
            if step % 4 == 0:
                print(f"[rank {self.rank}] step {step} loss {loss.item():.4f}", flush=True)
        dist.barrier()
        return sum(losses) / len(losses)

    def shutdown(self):
        dist.destroy_process_group()


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    log.info("launching %d DDP actors, master port %d", args.world, args.port)
    workers = [DDPWorker.remote(r, args.world, args.port) for r in range(args.world)]
    log.info("setup: %s", ray.get([w.setup.remote(args.noisy) for w in workers]))
    cfg = dict(fault=args.fault, rank=args.rank, step=args.step, steps=args.steps)
    results = ray.get([w.train.remote(cfg) for w in workers])
    log.info("mean losses per rank: %s", results)
    ray.get([w.shutdown.remote() for w in workers])
    log.info("done")
