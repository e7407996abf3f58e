"""mp.spawn-launched gloo training; --fault selects the bug."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp, torch.nn as nn

def worker(rank, world, args, hook):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    torch.set_num_threads(1)
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        x = torch.randn(4, 8); loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        t = torch.tensor([loss.item()]); dist.all_reduce(t)
        if rank == 0:
            print(f"[spawn] step {step} mean loss {t.item()/world:.4f}", flush=True)
        if args.fault == "early_return" and rank == args.fault_rank and step == args.fault_step:
            # eval-only rank: "done with my share" -> returns without the final barrier
            print(f"rank {rank}: finished my evaluation share, exiting", flush=True)
            return
        time.sleep(0.2)
    if hook is not None:
        model.register_forward_hook(hook)
    dist.barrier()
    if rank == 0:
        print("[spawn] all ranks done", flush=True)
    dist.destroy_process_group()

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none"); p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=2); p.add_argument("--steps", type=int, default=6)
    p.add_argument("--world", type=int, default=3); p.add_argument("--timeout", type=int, default=15)
    p.add_argument("--port", default="29830")
    args = p.parse_args()
    os.environ["MASTER_PORT"] = args.port
    hook = None
    if args.fault == "lambda_hook":
        hook = lambda m, i, o: print("fwd", o.shape)
    print(f"spawning {args.world} workers", flush=True)
    mp.spawn(worker, args=(args.world, args, hook), nprocs=args.world, join=True)

if os.environ.get("NO_MAIN_GUARD"):
    main()
elif __name__ == "__main__":
    main()
