"""torch.multiprocessing.spawn trainer that saves / resumes checkpoints.

--fault none | resume (load --resume into a model built with --hidden/--layers)
"""
import argparse, os, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", default="46715")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--resume", default="")
p.add_argument("--resume-rank", type=int, default=-1, help="-1: all ranks load")
p.add_argument("--save", default="")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--sched-first", action="store_true", help="warm-up scheduler stepped at loop start")
p.add_argument("--timeout-s", type=int, default=20)
args = p.parse_args()


def build(hidden, layers):
    mods = []
    for i in range(layers):
        mods += [nn.Linear(hidden, hidden), nn.ReLU()]
    return nn.Sequential(nn.Linear(16, hidden), *mods, nn.Linear(hidden, 4))


def worker(rank, world):
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
    log = logging.getLogger("trainer")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout_s))
    torch.manual_seed(0)
    model = build(args.hidden, args.layers)
    start = 0
    if args.resume and (args.resume_rank < 0 or args.resume_rank == rank):
        log.info("loading checkpoint %s", args.resume)
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        start = ck["step"]
        log.info("resumed at step %d", start)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    for step in range(start, start + args.steps):
        if args.sched_first:
            sched.step()
        x = torch.randn(32, 16); y = torch.randint(0, 4, (32,))
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if not args.sched_first:
            sched.step()
        if rank == 0:
            log.info("step=%d loss=%.4f lr=%.4f", step, loss.item(), sched.get_last_lr()[0])
    if args.save and rank == 0:
        torch.save({"model": model.state_dict(), "step": start + args.steps}, args.save)
        log.info("saved %s", args.save)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
