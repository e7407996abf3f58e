"""torch.multiprocessing.spawn launcher; MASTER_ADDR/MASTER_PORT handling faults."""
import argparse, os, logging, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--port", type=int, default=30670)
p.add_argument("--addr", default="127.0.0.1")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--timeout", type=int, default=20)
args = p.parse_args()

def worker(rank, world, args):
    logging.basicConfig(level=logging.INFO,
        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    if args.fault != "missing-env":
        os.environ["MASTER_ADDR"] = args.addr
        port = args.port
        if args.fault == "port-mismatch" and rank == args.rank:
            port = int(os.environ.get("TRAIN_PORT", args.port + 1))  # this rank read a stale env file
        os.environ["MASTER_PORT"] = str(port)
    log.info("init_process_group(gloo) MASTER_ADDR=%s MASTER_PORT=%s", os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT"))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(args.steps):
        x = torch.randn(16, 32); y = torch.randint(0, 4, (16,))
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 10 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    dist.barrier()
    log.info("finished")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.fault == "missing-env":
        os.environ.pop("MASTER_ADDR", None); os.environ.pop("MASTER_PORT", None)
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
