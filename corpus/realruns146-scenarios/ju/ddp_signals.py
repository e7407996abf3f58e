"""DDP toy training used for outside-stop / limit scenarios.

Ranks write their pid to <rundir>/rank<R>.pid so an outside actor (scheduler,
operator, prlimit) can act on a given rank.  Faults are real resource use:
  --fault nofile   : rank opens one shard file per step and never closes it
  --fault bigalloc : rank materialises a large activation buffer at --fault-step
  --fault fsize    : rank appends full-precision activations to a trace file each step
"""
import argparse, os, sys, time, logging, warnings, datetime, math

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--rundir", default="runs/tmp")
p.add_argument("--style", default="plain", choices=["plain", "logging", "tqdm"])
p.add_argument("--noise", action="store_true", help="print the usual warnings")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--alloc-gb", type=float, default=6.0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=47650)
args = p.parse_args()


def setup_logging(rank):
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    else:
        logging.basicConfig(level=logging.WARNING)
    return logging.getLogger("train")


def say(log, msg):
    if args.style == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


def main(rank=None, world=None):
    if rank is not None:  # mp.spawn
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    log = setup_logging(rank)
    os.makedirs(args.rundir, exist_ok=True)
    with open(os.path.join(args.rundir, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 4))
    if distributed:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.noise:
        # real-world noise: legacy API, scheduler order, uninitialised-looking tensors
        scaler = torch.amp.GradScaler("cuda")  # config copied from the GPU recipe
        sched.step()  # called before optimizer.step(): torch warns about the order
    say(log, f"rank {rank}/{world} pid {os.getpid()} ready; params={sum(p.numel() for p in model.parameters())}")
    g = torch.Generator().manual_seed(rank)
    w_true = torch.randn(32, 4, generator=torch.Generator().manual_seed(123))
    it = range(args.steps)
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", ncols=90, mininterval=0.5)
    open_shards = []
    trace = None
    for step in it:
        x = torch.randn(64, 32, generator=g)
        y = (x @ w_true).argmax(1)
        if rank == args.fault_rank and step >= args.fault_step:
            if args.fault == "nofile":
                # each step opens the next shard of the dataset index and keeps the handle
                path = os.path.join(args.rundir, "shards", f"shard-{step % 8:05d}.idx")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if not os.path.exists(path):
                    with open(path, "w") as f:
                        f.write("0\n")
                for k in range(40):
                    open_shards.append(open(path, "rb"))
            elif args.fault == "bigalloc" and step == args.fault_step:
                n = int(args.alloc_gb * (1 << 30) / 4)
                say(log, f"rank {rank}: building feature cache of {n} floats")
                cache = torch.empty(n)
                cache.fill_(0.0)
            elif args.fault == "fsize":
                if trace is None:
                    trace = open(os.path.join(args.rundir, f"acts-rank{rank}.bin"), "ab")
                trace.write(torch.randn(1 << 18).numpy().tobytes())  # 1 MiB per step
                trace.flush()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 5 == 0:
            msg = f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}"
            if args.style == "tqdm" and rank == 0:
                it.set_postfix(loss=f"{loss.item():.3f}")
                if step % 20 == 0:
                    it.write(f"[rank0] {msg}")
            else:
                say(log, f"[rank{rank}] {msg}")
        time.sleep(args.step_sleep)
    if distributed:
        dist.barrier()
    say(log, f"[rank{rank}] training done, final loss {loss.item():.4f}")
    if distributed:
        dist.destroy_process_group()


def main_spawn(rank, world):
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main_spawn, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
