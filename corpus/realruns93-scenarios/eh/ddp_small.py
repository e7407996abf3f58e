"""Small DDP (gloo, CPU) training script; a fault is injected on --rank at --step.
--fault: none | ckpt_trunc | weights_only | statedict | sleep (long run, for signals)
--launch: env (torchrun) | spawn (torch.multiprocessing.spawn)
"""
import argparse, os, sys, time, logging, argparse as _ap
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--launch", default="env")
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=40351)
p.add_argument("--ckpt", default="/tmp/eh_ckpt")
args = p.parse_args()

def build(hidden=64):
    return nn.Sequential(nn.Linear(16, hidden), nn.GELU(), nn.Linear(hidden, 4))

def worker(rank, world):
    if args.launch == "spawn":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("ddp")
    torch.manual_seed(0)
    model = build()
    os.makedirs(args.ckpt, exist_ok=True)
    init_path = os.path.join(args.ckpt, "init.pt")
    if rank == 0 and args.fault in ("ckpt_trunc", "weights_only", "statedict"):
        if args.fault == "weights_only":
            torch.save({"model": model.state_dict(), "args": args, "step": 0}, init_path)
        else:
            torch.save(build(128 if args.fault == "statedict" else 64).state_dict(), init_path)
        if args.fault == "ckpt_trunc":
            # copy to the node-local cache; the copy was cut short (quota hit mid-copy)
            data = open(init_path, "rb").read()
            with open(init_path + ".local", "wb") as f:
                f.write(data[: len(data) // 3])
    dist.barrier()
    if args.fault in ("ckpt_trunc", "weights_only", "statedict"):
        path = init_path + (".local" if (args.fault == "ckpt_trunc" and rank == args.rank) else "")
        log.info("loading init weights from %s", path)
        sd = torch.load(path, map_location="cpu")
        if args.fault == "weights_only":
            sd = sd["model"]
        model.load_state_dict(sd)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    if args.fault == "none" and rank == 0:
        log.warning("gradient clipping disabled; loss may spike")
    for step in range(args.steps):
        x = torch.randn(32, 16); y = torch.randint(0, 4, (32,))
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d loss %.4f", step, loss.item())
        time.sleep(1.0 if args.fault == "sleep" else 0.1)
    if rank == 0:
        torch.save(model.state_dict(), os.path.join(args.ckpt, "final.pt"))
        log.info("saved final checkpoint")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.launch == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
    else:
        worker(None, None)
