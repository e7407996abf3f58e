"""DDP toy training with debugging aids (faulthandler, anomaly detection, DEBUG logging).
Flags select fault, rank and step."""
import argparse, faulthandler, logging, os, signal, sys, time, threading, queue, ctypes
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--anomaly", action="store_true")
p.add_argument("--faulthandler-timeout", type=float, default=0)
p.add_argument("--faulthandler-exit", action="store_true")
p.add_argument("--log-level", default="INFO")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--sleep", type=float, default=0.2)
p.add_argument("--no-ddp", action="store_true", help="average gradients by hand instead of DDP")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, hidden, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden)
        self.fc2 = nn.Linear(hidden, 4)
        self.aux_head = nn.Linear(hidden, 4)
        self.use_aux = True

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        out = self.fc2(h)
        if self.use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def worker(rank, world):
    logging.basicConfig(level=getattr(logging, args.log_level),
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    log.debug("process group up: backend=%s world=%d", dist.get_backend(), world)
    if args.fault == "init_twice" and rank == args.rank:
        # re-initialise after a "reconfigure" helper
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    hidden = args.hidden
    if args.fault == "model_mismatch" and rank == args.rank:
        hidden = int(os.environ.get("HIDDEN_OVERRIDE", args.hidden * 2))
    torch.manual_seed(0)
    model = Net(hidden)
    if args.fault == "unused":
        model.use_aux = False  # aux head disabled by config, but DDP not told
    ddp = model if args.no_ddp else DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    if args.faulthandler_timeout > 0:
        faulthandler.dump_traceback_later(args.faulthandler_timeout, repeat=False, exit=args.faulthandler_exit)
    for step in range(args.steps):
        x = torch.randn(8, 16, generator=g)
        y = torch.randint(0, 4, (8,), generator=g)
        hit = step == args.step and rank == args.rank
        if hit and args.fault == "hang":
            # waits on a prefetch queue whose producer thread died silently
            q = queue.Queue()
            threading.Thread(target=lambda: None, name="prefetch").start()
            log.info("waiting for prefetched batch %d", step)
            batch = q.get()
        if hit and args.fault == "segv":
            ctypes.string_at(0)  # native extension dereferences a NULL buffer
        if hit and args.fault == "slow":
            time.sleep(args.pg_timeout * 3)
        out = ddp(x)
        if args.fault == "anomaly_nan" and rank == args.rank and step >= args.step:
            # log-variance head: variance estimate goes negative on this shard
            var = out.var(dim=1) - 0.5
            loss = nn.functional.cross_entropy(out, y) + torch.sqrt(var).mean() * 0.0
        elif args.fault == "inplace" and hit:
            h = torch.sigmoid(out)
            h.mul_(2.0)  # in-place rescale of a tensor saved for backward
            loss = nn.functional.cross_entropy(h, y)
        else:
            loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        if args.no_ddp:
            for prm in model.parameters():
                dist.all_reduce(prm.grad)
                prm.grad /= world
        opt.step()
        if args.fault == "coll_mismatch" and step == args.step:
            n = 4 if rank != args.rank else 5
            stats = torch.ones(n)
            dist.all_reduce(stats)
        else:
            stats = torch.tensor([loss.item()])
            dist.all_reduce(stats)
        if args.fault == "monitored" and step == args.step:
            if rank == args.rank:
                time.sleep(args.pg_timeout * 2)
            dist.monitored_barrier(timeout=timedelta(seconds=5))
        log.info("step %d loss %.4f mean_loss %.4f", step, loss.item(), stats[0].item() / world)
        time.sleep(args.sleep)
    faulthandler.cancel_dump_traceback_later()
    dist.barrier()
    if rank == 0:
        log.info("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "30310")
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
