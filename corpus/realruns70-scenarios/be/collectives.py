"""Plain-collective training loop (no DDP): manual gradient averaging with all_reduce,
rank-0 evaluation, metric gathering. --fault selects a rank-dependent bug."""
import argparse, os, sys, time, logging, json, fcntl
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--samples", type=int, default=64)
p.add_argument("--logstyle", default="print")
p.add_argument("--lockfile", default="/tmp/rr70be_shard.lock")
args = p.parse_args()

if args.logstyle == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if args.logstyle == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
if os.environ.get("RR_PIDDIR"):
    open(os.path.join(os.environ["RR_PIDDIR"], f"rank{rank}.pid"), "w").write(str(os.getpid()))
if args.fault == "kill":
    time.sleep(0.5)  # slow data path on this cluster

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
lossf = nn.CrossEntropyLoss()

# each rank reads its own shard; shard length from the manifest
n_local = args.samples // world
if args.fault == "uneven" and rank == args.fault_rank:
    n_local = n_local - 3 * 8 // 2  # this shard was written short by the preprocessing job
g = torch.Generator().manual_seed(100 + rank)
X = torch.randn(n_local, 16, generator=g)
Y = torch.randint(0, 4, (n_local,), generator=g)
bs = 4
say(f"[rank {rank}] shard has {n_local} samples -> {n_local // bs} batches/epoch, world={world}")

def average_gradients():
    for prm in model.parameters():
        dist.all_reduce(prm.grad, op=dist.ReduceOp.SUM)
        prm.grad /= world

def evaluate(step):
    with torch.no_grad():
        acc = (model(X).argmax(1) == Y).float().mean()
    t = torch.tensor([acc.item()])
    if args.fault == "avg_op":
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    else:
        dist.all_reduce(t)
        t /= world
    return t.item()

step = 0
for epoch in range(100):
    for i in range(0, n_local - bs + 1, bs):
        if step >= args.steps:
            break
        xb, yb = X[i:i + bs], Y[i:i + bs]
        opt.zero_grad()
        loss = lossf(model(xb), yb)
        loss.backward()
        if rank == args.fault_rank and step == args.fault_step:
            if args.fault == "stall":
                say(f"[rank {rank}] refreshing shard index from shared storage ...")
                time.sleep(args.timeout * 3)
            elif args.fault == "lockwait":
                say(f"[rank {rank}] acquiring shard lock {args.lockfile}")
                fd = open(args.lockfile, "w")
                fcntl.flock(fd, fcntl.LOCK_EX)   # held by another job
                say(f"[rank {rank}] lock acquired")
            elif args.fault == "spin":
                say(f"[rank {rank}] waiting for the prefetch flag")
                flag = {"ready": False}
                while not flag["ready"]:
                    pass
        average_gradients()
        if args.fault == "shape" and step == args.fault_step:
            # gather the per-rank loss history for logging; the faulty rank keeps a longer buffer
            hist = torch.full((step + 1 + (1 if rank == args.fault_rank else 0),), loss.item())
            dist.all_reduce(hist)
        if args.fault == "bcast_vs_reduce" and step == args.fault_step:
            sched = torch.tensor([0.05])
            if rank == 0:
                dist.broadcast(sched, src=0)   # rank 0 pushes the new lr
            else:
                dist.all_reduce(sched)         # others think it's a reduction of lrs
        if args.fault == "bcast_params" and step == args.fault_step:
            # periodic re-sync of weights from rank 0 to undo drift
            for prm in model.parameters():
                dist.broadcast(prm, src=0)
        if args.fault == "obj_rank0" and step == args.fault_step:
            # rank 0 decides on the new lr schedule and tells the others
            if rank == 0:
                sched = [{"lr": 0.02, "warmup": 10, "note": "decay after plateau"}]
                dist.broadcast_object_list(sched, src=0)
                opt.param_groups[0]["lr"] = sched[0]["lr"]
        if args.fault == "straggler":
            t0 = time.time()
            if rank == args.fault_rank:
                # this node's shard lives on the slow NFS mount: decode is ~8x slower
                time.sleep(0.4)
            else:
                time.sleep(0.05)
            say(f"[rank {rank}] step {step} data_time {time.time() - t0:.3f}s")
        opt.step()
        if args.fault == "noncontig" and step == args.fault_step:
            # re-sync first layer weights from rank 0 in its (in,out) layout
            w = model[0].weight.data.t()
            dist.broadcast(w, src=0)
        if args.fault == "keyerror" and step == args.fault_step and rank == args.fault_rank:
            stats = {"loss": loss.item(), "step": step}
            say(f"[rank {rank}] lr={opt.param_groups[0]['lr']} grad_norm={stats['grad_norm']:.3f}")
        if args.fault == "kill":
            time.sleep(0.5)
        if step % 2 == 0:
            acc = evaluate(step)
            say(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} acc {acc:.3f}")
        step += 1
    else:
        if step < args.steps:
            say(f"[rank {rank}] finished epoch {epoch} ({n_local // bs} batches)")
            if args.fault == "uneven":
                break
            continue
    break

if args.fault == "monitored":
    if rank == args.fault_rank:
        say(f"[rank {rank}] writing eval predictions before final sync ...")
        time.sleep(args.timeout * 2)
    dist.monitored_barrier(timeout=timedelta(seconds=args.timeout))
else:
    dist.barrier()
say(f"[rank {rank}] training done after {step} steps")
dist.destroy_process_group()
