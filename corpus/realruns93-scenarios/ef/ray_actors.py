"""ray.remote parameter-server style training with actors/tasks on CPU; faults in actors and scheduling."""
import argparse
import os
import resource
import signal
import time

import numpy as np
import ray
import torch
import torch.nn as nn
from ray.util.placement_group import placement_group, placement_group_table

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--cpus", type=int, default=2)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--address", default=None)
p.add_argument("--mem-gb", type=float, default=0.0)
args = p.parse_args()


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))


@ray.remote(num_cpus=1)
class GradWorker:
    def __init__(self, wid, as_limit_mb=0):
        self.wid = wid
        self.model = make_model()
        self.g = torch.Generator().manual_seed(wid)
        if as_limit_mb:
            # the site's job wrapper caps address space per worker process
            vm_kb = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1])
            cap = (vm_kb << 10) + (as_limit_mb << 20)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        print(f"GradWorker {wid} ready in pid {os.getpid()}", flush=True)

    def pid(self):
        return os.getpid()

    def compute(self, weights, step, feat_cache_rows=0):
        self.model.load_state_dict(weights)
        x = torch.randn(64, 32, generator=self.g)
        y = x.sum(1, keepdim=True)
        if feat_cache_rows:
            # build a feature cache for the "hard example" replay buffer
            cache = torch.empty(feat_cache_rows, 4096)
            cache.normal_()
            x = x + cache[:64, :32] * 0
        loss = ((self.model(x) - y) ** 2).mean()
        self.model.zero_grad()
        loss.backward()
        return {k: p.grad.clone() for k, p in self.model.named_parameters()}, loss.item()


@ray.remote(num_cpus=1)
def build_features(n_rows):
    a = np.ones((n_rows, 1024), dtype=np.float32)  # grows with n_rows
    time.sleep(2)
    return float(a.sum())


def main():
    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False)
    print("cluster resources:", ray.cluster_resources(), flush=True)

    if args.fault == "placement-group":
        # 'one bundle per data-parallel worker, 2 CPUs each' copied from the GPU cluster config
        pg = placement_group([{"CPU": 2}] * args.workers, strategy="STRICT_PACK")
        print("waiting for placement group", pg.id, flush=True)
        ready = pg.wait(timeout_seconds=40)
        if not ready:
            print(placement_group_table(pg), flush=True)
            raise TimeoutError(f"Placement group {pg.id} not ready after 40 s")
    if args.fault == "memtask":
        print("precomputing features with", args.workers, "tasks", flush=True)
        out = ray.get([build_features.remote(int(args.mem_gb * (1 << 30) / 4096)) for _ in range(args.workers)])
        print("features", out, flush=True)

    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    limit = 1024 if args.fault == "rlimit" else 0
    workers = [GradWorker.remote(i, limit if i == 1 else 0) for i in range(args.workers)]
    pids = ray.get([w.pid.remote() for w in workers])
    print("worker pids", pids, flush=True)
    for step in range(args.steps):
        w = {k: v.detach().clone() for k, v in model.state_dict().items()}
        rows = 200_000 if (args.fault == "rlimit" and step == 2) else 0
        if args.fault == "actor-kill" and step == 3:
            # an admin script on the node killed the stray-looking python process
            os.kill(pids[1], signal.SIGKILL)
        refs = [wk.compute.remote(w, step, rows if i == 1 else 0) for i, wk in enumerate(workers)]
        results = ray.get(refs)
        grads = [r[0] for r in results]
        losses = [r[1] for r in results]
        for k, p in model.named_parameters():
            p.grad = torch.stack([g[k] for g in grads]).mean(0)
        opt.step()
        print(f"step {step} mean loss {np.mean(losses):.4f}", flush=True)
    print("training complete")
    ray.shutdown()


if __name__ == "__main__":
    main()
