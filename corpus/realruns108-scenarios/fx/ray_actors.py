"""Actor-based training helpers (parameter server / rollout workers) and cluster resources."""
import argparse, os, sys, time, signal, logging
import numpy as np
import ray

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=5)
p.add_argument("--store-mb", type=int, default=0)
p.add_argument("--spill-dir", default=None)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(message)s")
log = logging.getLogger("fx.actors")


class MetricsTracker:
    """Thread-safe CSV metrics writer shared by the driver and the rollout workers."""
    def __init__(self, path):
        import threading
        self.lock = threading.Lock()
        self.f = open(path, "a")
    def log(self, **kv):
        with self.lock:
            self.f.write(",".join(f"{k}={v}" for k, v in kv.items()) + "\n")
            self.f.flush()


@ray.remote(num_cpus=1)
class ParamServer:
    def __init__(self, dim):
        import torch
        self.w = torch.zeros(dim)
        self.version = 0
    def apply(self, grad):
        self.w -= 0.1 * grad
        self.version += 1
        return self.version
    def get(self):
        return self.w


@ray.remote(num_cpus=1)
class RolloutWorker:
    def __init__(self, idx, fault, step, tracker=None):
        self.idx, self.fault, self.step_at = idx, fault, step
        self.tracker = tracker
        self.n = 0
        self.cache = []
    def pid(self):
        return os.getpid()
    def compute(self, w):
        import torch
        self.n += 1
        if self.fault == "exit" and self.n == self.step_at:
            # the env wrapper calls os._exit when the simulator reports a fatal state
            log.error("simulator returned fatal state code 7; aborting rollout worker")
            os._exit(7)
        if self.fault == "memory" and self.n >= self.step_at:
            # replay buffer grows without bound (never trimmed)
            self.cache.append(np.ones((256, 1024, 1024), dtype=np.float32))
        x = torch.randn(64, w.numel())
        return (x.T @ (x @ w - 1.0)) / 64


def main():
    kw = {}
    if args.store_mb:
        kw["object_store_memory"] = args.store_mb * 1024 * 1024
    if args.spill_dir:
        kw["object_spilling_directory"] = args.spill_dir
    ray.init(num_cpus=2, include_dashboard=False, **kw)
    if args.fault == "pg":
        from ray.util.placement_group import placement_group
        bundles = [{"CPU": 2}, {"CPU": 2}]
        pg = placement_group(bundles, strategy="STRICT_PACK", name="fx-trainers")
        log.info("waiting for placement group %s", bundles)
        ray.get(pg.ready(), timeout=60)
        log.info("placement group ready")
    if args.fault == "store":
        log.info("loading embedding table into the object store")
        table = np.random.default_rng(0).standard_normal((6000, 4096)).astype(np.float32)  # ~94 MiB
        refs = [ray.put(table)]
        log.info("put table %.1f MiB", table.nbytes / 2**20)
        more = [ray.put(table * 1.0) for _ in range(3)]
        log.info("put %d more copies", len(more))
    ps = ParamServer.options(num_cpus=0).remote(32)
    tracker = None
    if args.fault == "tracker":
        tracker = MetricsTracker("/work/rr108/fx/work/metrics.csv")
    workers = [RolloutWorker.remote(i, args.fault if i == 1 else "none", args.step, tracker) for i in range(2)]
    pids = ray.get([w.pid.remote() for w in workers])
    log.info("rollout workers up: pids %s", pids)
    for it in range(20):
        w = ps.get.remote()
        grads = [wk.compute.remote(w) for wk in workers]
        if args.fault == "sigkill" and it == args.step:
            os.kill(pids[1], signal.SIGKILL)
        gs = ray.get(grads)
        v = ray.get(ps.apply.remote(sum(gs) / len(gs)))
        wn = float(ray.get(ps.get.remote()).norm())
        log.info("iter %d version %d |w|=%.4f", it, v, wn)
        time.sleep(0.3)
    log.info("finished")
    ray.shutdown()


if __name__ == "__main__":
    main()
