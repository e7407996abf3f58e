"""Tiny data-parallel regression trained with hand-written collectives (gloo)."""
import argparse, os, sys, time, threading, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

def log(r, msg):
    if args.logging:
        logging.info("[rank%d] %s", r, msg)
    else:
        print(f"[rank{r}] {msg}", flush=True)

def average_grads(model, world):
    for prm in model.parameters():
        dist.all_reduce(prm.grad, op=dist.ReduceOp.SUM)
        prm.grad /= world

def main(rank=None, world=None):
    if args.logging:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if rank is None:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    if args.fault == "init_twice" and rank == args.rank:
        # helper module "re-initialises" distributed for its own use
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    hidden = 32
    if args.fault == "ddp_mismatch" and rank == args.rank:
        hidden = int(os.environ.get("HIDDEN", "48"))  # stale env var on this host
    model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    if args.fault == "ddp_mismatch":
        model = torch.nn.parallel.DistributedDataParallel(model)
    # sync initial weights from rank 0
    src = 0
    if args.fault == "bcast_src":
        src = int(os.environ.get("LOCAL_RANK", rank))  # bug: local rank used as source
    for prm in model.parameters():
        dist.broadcast(prm.data, src=src)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    n_batches = args.steps
    if args.fault == "uneven" and rank == args.rank:
        n_batches = args.step  # this shard has fewer samples
    sub = None
    if args.fault in ("subgroup", "subgroup_src"):
        sub = dist.new_group(ranks=[0, 1])
    it = range(n_batches)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stderr, mininterval=0)
    for step in it:
        x = torch.randn(8, 16, generator=g); y = x.sum(1, keepdim=True) * 0.1
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward()
        average_grads(model, world)
        opt.step()
        l = loss.detach().clone()
        if args.fault == "avg" and step >= args.step:
            dist.all_reduce(l, op=dist.ReduceOp.AVG)  # "simplified" metric averaging
        else:
            dist.all_reduce(l); l /= world
        if step == args.step:
            f = args.fault
            if f == "allgather_size":
                n = 4 if rank != args.rank else 5   # rank's local metric buffer has an extra entry
                local = torch.full((n,), float(rank))
                out = [torch.empty(4) for _ in range(world)]
                dist.all_gather(out, local)
            elif f == "allgather_obj":
                stats = {"loss": l.item(), "rank": rank}
                if rank == args.rank:
                    stats["lock"] = threading.Lock()  # accidentally carried the logger lock
                objs = [None] * world
                dist.all_gather_object(objs, stats)
            elif f == "bcast_obj":
                cfg = [None]
                if rank == 0:
                    cfg = [{"lr_fn": lambda s: 0.05 * 0.9 ** s}]
                dist.broadcast_object_list(cfg, src=0)
            elif f == "reduce_scatter":
                inp = torch.randn(world * 4 + (1 if rank == args.rank else 0))
                out = torch.empty(4)
                dist.reduce_scatter_tensor(out, inp)
            elif f == "subgroup":
                t = torch.ones(3) * rank
                dist.all_reduce(t, group=sub)
                log(rank, f"subgroup sum {t.tolist()}")
                dist.barrier()
            elif f == "subgroup_src":
                # share the eval-set size from the data-loading rank (last rank) inside the dp subgroup
                t = torch.tensor([float(rank)])
                dist.broadcast(t, src=world - 1, group=sub)
                log(rank, f"eval size {t.item()}")
            elif f == "barrier_some":
                if rank != args.rank:
                    dist.barrier()  # only non-logging ranks sync before eval
            elif f == "monitored":
                if rank == args.rank:
                    time.sleep(args.timeout * 3)
                dist.monitored_barrier(timeout=timedelta(seconds=args.timeout))
            elif f == "sendrecv":
                t = torch.zeros(4)
                # pipeline handoff: everybody waits for the previous stage first
                if rank == 0:
                    dist.recv(t, src=world - 1)
                    dist.send(t, dst=1)
                else:
                    dist.recv(t, src=rank - 1)
                    dist.send(t, dst=(rank + 1) % world)
            elif f == "sendrecv_tag":
                t = torch.zeros(4)
                if rank == 0:
                    dist.send(torch.ones(4), dst=1, tag=1)
                elif rank == 1:
                    dist.recv(t, src=0, tag=2)
            elif f == "destroy_early":
                if rank == args.rank:
                    dist.destroy_process_group()  # cleanup moved into the epoch loop
            elif f == "kill":
                if rank == args.rank:
                    os.kill(os.getpid(), 9)
            elif f == "segv":
                if rank == args.rank:
                    import ctypes; ctypes.string_at(0)
        if rank == 0:
            log(rank, f"step {step} loss {l.item():.4f}")
    if args.fault == "uneven":
        dist.barrier()
    log(rank, "training done")
    dist.destroy_process_group()

def spawn_entry(r, w):
    main(r, w)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "36920")
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
