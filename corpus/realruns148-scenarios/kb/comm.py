"""Tiny DDP/gloo trainer with selectable communication faults.
Launch with torchrun (env://) or --spawn N (torch.multiprocessing.spawn)."""
import argparse, os, sys, time, logging, warnings, datetime, faulthandler
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--pg-timeout", type=int, default=15)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--port", type=int, default=48000)
p.add_argument("--noisy", action="store_true")
p.add_argument("--manual-sync", action="store_true")
p.add_argument("--step-delay", type=float, default=0.0)
args = p.parse_args()
faulthandler.enable()

def out(rank, msg):
    if args.use_logging:
        logging.getLogger("train").info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)

class Net(nn.Module):
    def __init__(self, hidden=32, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden); self.fc2 = nn.Linear(hidden, 4)
        self.aux = nn.Linear(hidden, 4) if extra else None
    def forward(self, x, use_aux=False):
        h = torch.relu(self.fc1(x))
        return self.aux(h) if (use_aux and self.aux is not None) else self.fc2(h)

def shard(rank, world, n=256):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 16, generator=g); Y = torch.randint(0, 4, (n,), generator=g)
    idx = list(range(rank, n, world))
    if args.fault == "uneven" and rank == args.bad_rank:
        idx = idx[: 8 * args.at_step]     # this rank's shard file was shorter
    return [(X[i:i+8], Y[i:i+8]) for i in range(0, len(idx), 8)] if False else \
           [(X[idx[j:j+8]], Y[idx[j:j+8]]) for j in range(0, len(idx), 8)]

def main(rank=None, world=None):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank if rank is not None else os.environ.get('RANK')}] %(name)s: %(message)s")
    if rank is not None:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    if args.fault == "late_start" and int(os.environ.get("RANK", 0)) == args.bad_rank:
        time.sleep(args.pg_timeout + 10)
    to = datetime.timedelta(seconds=args.pg_timeout)
    dist.init_process_group("gloo", timeout=to)
    rank = dist.get_rank(); world = dist.get_world_size()
    if args.fault == "init_twice" and rank == args.bad_rank:
        # helper "setup_distributed()" called again from the trainer
        dist.init_process_group("gloo", timeout=to)
    torch.manual_seed(0)
    hidden = 48 if (args.fault == "model_mismatch" and rank == args.bad_rank) else 32
    extra = args.fault in ("unused",)
    model = Net(hidden, extra)
    if args.noisy:
        warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    ddp = model if args.manual_sync else DDP(model, find_unused_parameters=args.noisy)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    data = shard(rank, world)
    out(rank, f"world={world} batches={len(data)} params={sum(p.numel() for p in model.parameters())}")
    sub = None
    if args.fault == "group_oob":
        # pipeline-stage groups computed for 4 GPUs, launched on fewer
        sub = dist.new_group([r for r in range(0, 4, 2)] if rank == args.bad_rank or True else None)
    if args.fault == "new_group_subset":
        # bug: only ranks in the subgroup create it
        if rank in (0, 1):
            sub = dist.new_group([0, 1])
    it = range(args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stdout)
    step = 0
    for step in it:
        if step >= len(data):
            break
        x, y = data[step]
        use_aux = args.fault == "unused" and rank == args.bad_rank and step >= args.at_step
        loss = nn.functional.cross_entropy(ddp(x), y)
        if args.fault == "crash" and rank == args.bad_rank and step == args.at_step:
            cfg = {"lr": 0.1, "warmup": 10}
            sched_lr = cfg["lr_schedule"]   # KeyError: config key missing on this node's yaml
        if args.fault == "segv" and rank == args.bad_rank and step == args.at_step:
            import ctypes; ctypes.string_at(0x10, 8)
        opt.zero_grad(); 
        if use_aux:
            loss = nn.functional.cross_entropy(ddp(x, use_aux=True), y)
        loss.backward()
        if args.manual_sync:
            for prm in model.parameters():
                dist.all_reduce(prm.grad); prm.grad /= world
        opt.step()
        # metric sync
        m = loss.detach().clone()
        if args.fault == "sleep" and rank == args.bad_rank and step == args.at_step:
            faulthandler.dump_traceback_later(args.pg_timeout + 2, exit=False)
            time.sleep(args.pg_timeout * 4)  # e.g. blocking on slow NFS read
        if args.fault == "skip" and rank == args.bad_rank and step == args.at_step:
            pass   # rank skips the metric all_reduce (logging only on "main" ranks bug)
        elif args.fault == "shape" and rank == args.bad_rank and step == args.at_step:
            buf = [torch.zeros(3) for _ in range(world)]
            dist.all_gather(buf, torch.ones(3))
        elif args.fault == "wrong_coll" and rank == args.bad_rank and step == args.at_step:
            dist.broadcast(m, src=0)
        else:
            if args.fault == "shape":
                buf = [torch.zeros(2) for _ in range(world)]
                dist.all_gather(buf, torch.ones(2))
            else:
                dist.all_reduce(m)
        if args.fault == "band_op" and rank == args.bad_rank and step == args.at_step:
            flag = torch.tensor([float(m.item() > 0)])
            dist.all_reduce(flag, op=dist.ReduceOp.BAND)   # "any rank finished" flag kept as float
        if args.fault == "send_self" and step == args.at_step:
            peer = (rank + 1) % world if rank != args.bad_rank else rank  # off-by-one in ring neighbour
            if rank == args.bad_rank:
                dist.send(m, dst=peer)
        if args.fault == "gather_len" and step == args.at_step:
            n_out = world if rank != args.bad_rank else int(os.environ.get("LOCAL_WORLD_SIZE", world)) - 1
            outs = [torch.zeros_like(m) for _ in range(n_out)]
            dist.all_gather(outs, m)
        if args.fault == "monitored" :
            if rank == args.bad_rank and step == args.at_step:
                time.sleep(args.pg_timeout * 3)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.pg_timeout))
        if args.fault == "exit" and rank == args.bad_rank and step == args.at_step:
            out(rank, "early stopping: val loss did not improve")
            sys.exit(0)
        if sub is not None or args.fault == "new_group_subset":
            t = torch.ones(1); dist.all_reduce(t, group=sub) if sub is not None else None
        if args.fault == "barrier_hang" and rank == args.bad_rank and step == args.at_step:
            out(rank, "waiting for checkpoint lock ...")
            while os.path.exists("/tmp/kb_lock_never_released") or True:
                time.sleep(1)
        time.sleep(args.step_delay)
        if rank == 0 or not args.progress:
            out(rank, f"step {step} loss {m.item()/world:.4f}")
    dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), f"/work/rr148/kb/ckpt_{os.getpid()}.pt"); os.remove(f"/work/rr148/kb/ckpt_{os.getpid()}.pt")
        out(rank, "training done")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
