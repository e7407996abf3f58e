"""Metric / config exchange with object collectives (all_gather_object, broadcast_object_list)."""
import argparse, os, sys, threading, time, resource
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--step", type=int, default=2)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--memlimit-mb", type=int, default=0)
a = p.parse_args()

def main(rank=None, world=None):
    if rank is not None:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.memlimit_mb and rank == a.bad_rank:
        # this rank runs in a memory-capped cgroup-like limit
        resource.setrlimit(resource.RLIMIT_AS, (a.memlimit_mb << 20, a.memlimit_mb << 20))
    torch.manual_seed(rank)
    model = nn.Linear(8, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    lock = threading.Lock()
    # rank 0 owns the run config and broadcasts it
    cfg = [{"lr": 1e-2, "run": "exp-17", "seed": 17}] if rank == 0 else [None]
    dist.broadcast_object_list(cfg, src=0)
    print(f"[rank {rank}] got config {cfg[0]}", flush=True)
    for step in range(a.steps):
        x = torch.randn(16, 8); y = torch.randint(0, 2, (16,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad); prm.grad /= world
        opt.step()
        stats = {"rank": rank, "step": step, "loss": round(loss.item(), 4), "n": 16}
        if a.fault == "unpicklable" and rank == a.bad_rank and step == a.step:
            # debugging aid added on one rank: attach the logger state
            stats["io_lock"] = lock
        if a.fault == "huge" and rank == a.bad_rank and step == a.step:
            # rank attaches its whole eval predictions buffer to the metrics dict
            stats["preds"] = torch.randn(64 << 20)  # 256 MB
        gathered = [None] * world
        dist.all_gather_object(gathered, stats)
        if rank == 0:
            mean = sum(g["loss"] for g in gathered) / world
            print(f"step {step} mean_loss={mean:.4f} per_rank={[g['loss'] for g in gathered]}", flush=True)
        if a.fault == "meta-class" and step == a.step:
            # rank 0 (the checkpointing rank) imports its helper from a local dir
            if rank == 0:
                sys.path.insert(0, os.path.join(os.path.dirname(__file__), "rank0_helpers"))
                from ckpt_meta import CkptMeta
                obj = [CkptMeta("/tmp/ckpt/step%d.pt" % step, step, True)]
            else:
                obj = [None]
            dist.broadcast_object_list(obj, src=0)
            print(f"[rank {rank}] checkpoint meta {obj[0]}", flush=True)
        if a.fault == "bcast-len" and step == a.step:
            # rank 0 sends [ckpt_path, epoch]; other ranks were written expecting one item
            obj = ["/tmp/ckpt/step%d.pt" % step, step] if rank == 0 else [None]
            dist.broadcast_object_list(obj, src=0)
            print(f"[rank {rank}] ckpt info {obj}", flush=True)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()

def _entry(r, w):
    main(r, w)

if __name__ == "__main__":
    if os.environ.get("USE_SPAWN") == "1":
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_PORT", "30420")
        w = int(os.environ.get("NPROCS", "2"))
        mp.spawn(_entry, args=(w,), nprocs=w)
    else:
        main()
