"""Ray actor pool that (re)initialises torch.distributed per 'job'; a retried setup hits one actor twice."""
import argparse, datetime, time
import ray
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--port", type=int, default=40441)
args = p.parse_args()


@ray.remote(num_cpus=1)
class Trainer:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.jobs = 0

    def setup(self, port):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=self.rank,
                                world_size=self.world, timeout=datetime.timedelta(seconds=20))
        self.jobs += 1
        print(f"[rank {self.rank}] joined group on port {port} (job #{self.jobs})", flush=True)
        return True

    def run(self, steps=6):
        model = nn.parallel.DistributedDataParallel(nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for s in range(steps):
            loss = model(torch.randn(4, 8)).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        return loss.item()


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    actors = [Trainer.remote(r, args.world) for r in range(args.world)]
    refs = [a.setup.remote(args.port) for a in actors]
    ready, pending = ray.wait(refs, num_returns=len(refs), timeout=30)
    print(f"setup ready={len(ready)} pending={len(pending)}")
    if args.fault == "setup-twice":
        # health probe flagged rank's setup as slow -> the job script re-sends setup to that actor
        print(f"re-sending setup to rank {args.rank} after slow health probe")
        ray.get(actors[args.rank].setup.remote(args.port))
    print("losses:", ray.get([a.run.remote() for a in actors]))
