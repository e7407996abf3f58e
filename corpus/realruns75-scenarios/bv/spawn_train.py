"""torch.multiprocessing.spawn launcher for a toy DDP job (gloo), with GPU-era helpers left in."""
import argparse, datetime, os, sys, time, warnings
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp


class StepTimer:
    """Per-step timing helper copied from the GPU codebase."""
    def __init__(self):
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def __enter__(self):
        self.start.record(); return self

    def __exit__(self, *a):
        self.end.record(); torch.cuda.synchronize()
        self.ms = self.start.elapsed_time(self.end)


def worker(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=args.timeout))
    faulty = args.fault_rank < 0 or args.fault_rank == rank
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    if args.fault == "healthy_bf16":
        warnings.warn("torch.cuda.is_bf16_supported() is False; falling back to CPU autocast bfloat16")
    for step in range(args.steps):
        x = torch.randn(32, 32); y = torch.randint(0, 8, (32,))
        if args.fault == "pin_tensor" and faulty and step == args.fault_step:
            x = x.pin_memory()  # async H2D copy path from the GPU input pipeline
        if args.fault == "cuda_event" and faulty and step == args.fault_step:
            timer = StepTimer()
        if args.fault == "healthy_bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(ddp(x), y)
        else:
            loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            print(f"rank {rank} | step {step:3d} | loss {loss.item():.4f}", flush=True)
        time.sleep(0.05)
    dist.barrier()
    if rank == 0:
        print("all ranks finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--fault", default="none", choices=["none", "healthy_bf16", "pin_tensor", "cuda_event"])
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=0)
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--port", type=int, default=35590)
    p.add_argument("--timeout", type=int, default=20)
    args = p.parse_args()
    print(f"spawning {args.world} workers (cuda available: {torch.cuda.is_available()})", flush=True)
    mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
