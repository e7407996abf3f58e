"""Compiled DDP training launched with torch.multiprocessing.spawn; --mode selects healthy/noisy or faults."""
import argparse, os, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp

def worker(rank, world, args):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    cm = torch.compile(ddp, backend=args.backend, mode=args.mode)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3)
    sched.step()  # (warns: called before optimizer.step)
    for step in range(args.steps):
        x = torch.randn(32, 20); y = x[:, :1] * 0.5 + 0.1
        pred = cm(x)
        loss = F.mse_loss(pred, y.squeeze(1)) if args.bcast_bug else F.mse_loss(pred, y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if rank == 0 and step % 2 == 0:
            log.info("step %d loss %.4f lr %.4f", step, loss.item(), sched.get_last_lr()[0])
    dist.barrier()
    if rank == 0:
        log.info("finished %d steps", args.steps)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--port", type=int, default=29860)
    p.add_argument("--backend", default="aot_eager")
    p.add_argument("--mode", default=None)
    p.add_argument("--bcast-bug", action="store_true")
    args = p.parse_args()
    mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
