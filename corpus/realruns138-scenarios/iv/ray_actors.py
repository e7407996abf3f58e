"""Ray Core: a gang of training actors scheduled into one placement group; each trains a shard.
Flags: --fault {none,pg,actorerr} --actors N --cpus-per-actor C --pg-wait S
"""
import argparse, os, time
import torch, torch.nn as nn
import ray
from ray.util.placement_group import placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

@ray.remote
class Trainer:
    def __init__(self, idx, hidden):
        self.idx = idx
        torch.manual_seed(idx)
        self.model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
    def train_epoch(self, epoch):
        g = torch.Generator().manual_seed(self.idx * 1000 + epoch)
        for _ in range(20):
            x = torch.randn(32, 16, generator=g); y = x[:, :2].sum(1, keepdim=True)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.opt.zero_grad(); loss.backward(); self.opt.step()
        return self.idx, epoch, loss.item()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--actors", type=int, default=2); ap.add_argument("--cpus-per-actor", type=float, default=1)
    ap.add_argument("--pg-wait", type=float, default=30); ap.add_argument("--epochs", type=int, default=3)
    a = ap.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir="/tmp/rr138iv_ray")
    bundles = [{"CPU": a.cpus_per_actor}] * a.actors
    pg = placement_group(bundles, strategy="STRICT_PACK", name="trainer-gang")
    print(f"waiting for placement group {bundles} (STRICT_PACK) ...", flush=True)
    ray.get(pg.ready(), timeout=a.pg_wait)
    actors = [Trainer.options(scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=i)).remote(i, 32)
              for i in range(a.actors)]
    for ep in range(a.epochs):
        for idx, e, l in ray.get([t.train_epoch.remote(ep) for t in actors]):
            print(f"actor {idx} epoch {e} loss {l:.4f}", flush=True)
    ray.shutdown()

if __name__ == "__main__":
    main()
