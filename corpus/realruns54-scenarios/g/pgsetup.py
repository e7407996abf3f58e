"""Tiny DDP training with selectable process-group set-up faults.
Rank/world from torchrun env, Open MPI env (OMPI_COMM_WORLD_*), or args."""
import argparse, os, sys, time, logging, warnings, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--init", default="env://")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--world-size", type=int, default=None)
p.add_argument("--rank", type=int, default=None)
p.add_argument("--backend", default="gloo")
p.add_argument("--logfmt", action="store_true")
p.add_argument("--noisy", action="store_true")
a = p.parse_args()

if "OMPI_COMM_WORLD_RANK" in os.environ:
    os.environ.setdefault("RANK", os.environ["OMPI_COMM_WORLD_RANK"])
    os.environ.setdefault("WORLD_SIZE", os.environ["OMPI_COMM_WORLD_SIZE"])
    os.environ.setdefault("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
rank_hint = a.rank if a.rank is not None else int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))

if a.logfmt:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] [rank{rank_hint}] %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank_hint}] {m}", flush=True)

torch.manual_seed(0)
if os.environ.get("PIDDIR"):
    os.makedirs(os.environ["PIDDIR"], exist_ok=True)
    open(os.path.join(os.environ["PIDDIR"], f"rank{rank_hint}.pid"), "w").write(str(os.getpid()))

def init():
    kw = dict(backend=a.backend, init_method=a.init, timeout=timedelta(seconds=a.timeout))
    if a.world_size is not None: kw["world_size"] = a.world_size
    if a.rank is not None: kw["rank"] = a.rank
    elif not a.init.startswith("env://") and "OMPI_COMM_WORLD_RANK" in os.environ:
        kw["rank"] = int(os.environ["OMPI_COMM_WORLD_RANK"])
        kw["world_size"] = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    dist.init_process_group(**kw)

if a.fault == "skip-init" and rank_hint == a.fault_rank:
    # bug: rank guard around init meant for logging only
    log("skipping process-group init on this rank (eval-only worker)")
else:
    if a.fault == "slow-init" and rank_hint == a.fault_rank:
        log("building vocabulary cache ..."); time.sleep(a.timeout + 15)
    init()
    if a.fault == "double-init":
        log("re-initialising process group for evaluation")
        init()

rank = dist.get_rank() if dist.is_initialized() else rank_hint
world = dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
log(f"process group ready: backend={a.backend} init={a.init} rank={rank} world={world}")

if a.noisy and rank == 0:
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", UserWarning)
    warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible.", UserWarning)
    log("WARNING: gradient norm 8.91e+03 exceeds clip threshold 1.0, clipping")

sub = None
if a.fault == "subgroup-partial":
    if rank in (0, 1):
        # bug: only the members create the group
        sub = dist.new_group(ranks=[0, 1])
elif a.fault == "subgroup-badranks":
    sub = dist.new_group(ranks=list(range(0, world + 1, 2)))  # off-by-one: includes world
elif a.fault == "none-subgroup":
    sub = dist.new_group(ranks=[r for r in range(world) if r % 2 == 0])

if a.fault == "missing-shard":
    # each rank loads its pre-tokenised shard; shard files produced by a prep job
    shard = torch.load(f"/work/rr54/g/data/shard_{rank:02d}.pt")
    log(f"loaded shard with {shard.shape[0]} rows")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
ddp = nn.parallel.DistributedDataParallel(model) if dist.is_initialized() else model
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
for step in range(1, a.steps + 1):
    x = torch.randn(8, 16, generator=g); y = torch.randint(0, 4, (8,), generator=g)
    if step == a.fault_step and rank == a.fault_rank:
        if a.fault == "straggle":
            log("refreshing shard index from disk ..."); time.sleep(a.timeout + 20)
        elif a.fault == "sleep-forever":
            log("waiting on prefetch"); time.sleep(600)
        elif a.fault == "mismatch":
            t = torch.ones(5)  # bug: this rank builds metric vector with extra field
            dist.all_reduce(t)
    if step == a.fault_step and a.fault == "mismatch" and rank != a.fault_rank:
        t = torch.ones(4); dist.all_reduce(t)
    if step == a.fault_step and a.fault == "skip-init" and rank == a.fault_rank:
        t = torch.tensor([1.0]); dist.all_reduce(t)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(ddp(x), y)
    loss.backward(); opt.step()
    if a.fault in ("straggle",) and step % 4 == 0:
        dist.barrier()
    if a.fault == "monitored" and step == a.fault_step and rank == a.fault_rank:
        log("writing eval shard summary ..."); time.sleep(a.timeout + 20)
    if a.fault == "monitored" and step % 4 == 0:
        dist.monitored_barrier(timeout=timedelta(seconds=a.timeout))
    if sub is not None and step % 3 == 0:
        m = torch.tensor([loss.item()]); dist.all_reduce(m, group=sub)
    if rank == 0 or a.logfmt:
        log(f"step {step}/{a.steps} loss={loss.item():.4f} lr=0.05")
    time.sleep(0.3)

if dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
log("training finished")
