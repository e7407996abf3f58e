"""Family: Inductor code generation / C++ build step of torch.compile in a small classifier job.
Launch with torchrun (env://), torch.multiprocessing.spawn (--spawn N) or plain python."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(__file__))
from common import MLP, feat_batch, setup_logging, avg_loss

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--spawn", type=int, default=0, help="launch N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=38640)
p.add_argument("--cache-root", default="", help="per-rank inductor cache dirs under this root (node-local scratch)")
p.add_argument("--node-env", default="", help="RANK:VAR=VALUE environment override for one rank (heterogeneous nodes)")
p.add_argument("--compile-opt", action="store_true", help="also torch.compile the optimizer step")
p.add_argument("--mode", default="default")
p.add_argument("--save", default="", help="save a checkpoint here at the end (rank 0)")
p.add_argument("--timeout", type=int, default=40)
p.add_argument("--pid-dir", default="", help="write rank<N>.pid files here (for ops tooling)")
p.add_argument("--step-sleep", type=float, default=0.0, help="simulated data loading time per step")
p.add_argument("--numpy-features", action="store_true", help="features come from a numpy preprocessing step")
p.add_argument("--feat-dim", default="", help="RANK:DIM feature width of that rank's data shard")
args = p.parse_args()


def train(rank, world):
    if args.node_env:
        r, kv = args.node_env.split(":", 1)
        if int(r) == rank:
            k, v = kv.split("=", 1)
            os.environ[k] = v
    if args.cache_root:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(args.cache_root, f"rank{rank}")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    log = setup_logging(rank)
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))
    d_in = 32
    if args.feat_dim and int(args.feat_dim.split(":")[0]) == rank:
        d_in = int(args.feat_dim.split(":")[1])
    torch.manual_seed(0)
    model = MLP()
    if world > 1:
        model = DDP(model)
    cmodel = torch.compile(model, mode=args.mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    @torch.compile(fullgraph=False)
    def opt_step():
        opt.step()

    log.info("compiling model with inductor (mode=%s, cache=%s)", args.mode,
             os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default"))
    t0 = time.time()
    for step in range(args.steps):
        x, y = feat_batch(step, rank=rank, d=d_in)
        if args.numpy_features:
            import numpy as np
            x = torch.from_numpy(np.asarray(x.numpy() * 1.0, dtype=np.float64) / np.sqrt(d_in))
        if args.step_sleep:
            time.sleep(args.step_sleep)
        loss = F.cross_entropy(cmodel(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.compile_opt:
            opt_step()
        else:
            opt.step()
        l = avg_loss(loss, world)
        if rank == 0:
            log.info("step %d loss %.4f elapsed %.1fs", step, l, time.time() - t0)
    if args.save and rank == 0:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, args.save)
        log.info("saved %s", args.save)
    if world > 1:
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    train(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        train(0, 1)
