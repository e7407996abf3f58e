"""DDP training loop with per-step metric all_reduce and an end-of-epoch sync; --fault makes one rank misbehave."""
import argparse, os, sys, time, ctypes
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=15)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29541)
p.add_argument("--pidfile", default="")
p.add_argument("--no-ddp", action="store_true")
args = p.parse_args()

def native_normalize(buf_addr):
    # "fast path" helper reading a raw buffer through ctypes (bug: address computed from a freed/None buffer)
    return ctypes.string_at(buf_addr, 64)

def worker(rank=None, world=None):
    if rank is not None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.pidfile:
        open(f"{args.pidfile}.{rank}", "w").write(str(os.getpid()))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
    if not args.no_ddp:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    if rank == 0:
        print(f"starting training: world_size={world} backend={dist.get_backend()}", flush=True)
    for step in range(args.steps):
        x = torch.randn(6, 16, generator=g)
        y = torch.randint(0, 5 if rank != args.fault_rank else 4, (6,), generator=g)
        hit = step == args.fault_step and rank == args.fault_rank
        if hit and args.fault == "segv":
            import mmap
            shard = mmap.mmap(-1, 1 << 20)            # staging buffer for the "fast" normaliser
            addr = ctypes.addressof(ctypes.c_char.from_buffer(shard)); del shard  # noqa
            # bug: buffer released before the native read (use-after-unmap)
            import gc; gc.collect()
            native_normalize(addr)
        if hit and args.fault == "stall":
            print(f"[rank{rank}] waiting for shard lock /work/rr52/a/tmp/shard_{rank}.lock", flush=True)
            while not os.path.exists(f"/work/rr52/a/tmp/shard_{rank}.ready"):
                time.sleep(1)
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        # metrics: per-class counts summed over ranks
        if args.fault == "bincount":
            counts = torch.bincount(y).float()            # bug: no minlength
        else:
            counts = torch.bincount(y, minlength=5).float()
        dist.all_reduce(counts)
        l = loss.detach().clone(); dist.all_reduce(l); l /= world
        if rank == 0:
            print(f"step {step} loss {l.item():.4f} class_counts {counts.tolist()}", flush=True)
        if args.fault == "sigkill":
            time.sleep(0.8)
        if args.fault == "monitored" and step == args.steps - 1:
            if rank == args.fault_rank:
                print(f"[rank{rank}] running local evaluation before epoch sync", flush=True)
                while not os.path.exists(f"/work/rr52/a/tmp/eval_{rank}.ready"):
                    time.sleep(1)
            dist.monitored_barrier(timeout=timedelta(seconds=args.timeout), wait_all_ranks=True)
    dist.barrier()
    if rank == 0:
        print("epoch done", flush=True)
    dist.destroy_process_group()

def entry(rank, world):
    worker(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        worker()
