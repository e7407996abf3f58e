"""Small DDP regression trainer used for stall / hang scenarios.

--fault selects what goes wrong:
  none               healthy run
  slow-eval          --rank runs an extra (quadratic, pure-python) "eval" at --step and never returns in time
  rank0-barrier      only rank 0 reaches the checkpoint barrier (barrier inside `if rank == 0`)
  monitored          like rank0-barrier but the run uses monitored_barrier for sync
  metrics-keys       ranks all_reduce metric tensors of different length (rank-dependent metric keys)
  straggler          --rank does expensive preprocessing on every step (slow rank)
  queue-deadlock     --rank waits on a prefetch queue whose producer thread died silently
"""
import argparse, os, sys, time, logging, threading, queue, math
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--timestamps", action="store_true", help="use logging with timestamps")
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--plain", action="store_true", help="no DDP wrapper: average gradients by hand with all_reduce")
args = p.parse_args()

if args.timestamps:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s [%(levelname)s] rank%(rank)s %(name)s: %(message)s")
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
log = logging.getLogger("train")


def say(msg):
    if args.timestamps:
        log.info(msg, extra={"rank": rank})
    else:
        print(f"[rank{rank}] {msg}", flush=True)


dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
ddp = model if args.plain else DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
X = torch.randn(2048, 32, generator=g)
Y = X[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(2048, 1, generator=g)
say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} fault={args.fault}")


def slow_eval(n, rounds=1):
    # pure-python pairwise distance "metric" with bootstrap rounds: O(rounds * n^2)
    pts = X[:n].tolist()
    acc = 0.0
    for r in range(rounds):
        for i in range(len(pts)):
            for j in range(len(pts)):
                acc += math.dist(pts[i], pts[j])
    return acc / (rounds * n * n)


# prefetch queue (used by queue-deadlock)
q = queue.Queue(maxsize=4)


def producer():
    i = 0
    while True:
        idx = torch.randint(0, 2048, (64,), generator=torch.Generator().manual_seed(i))
        if args.fault == "queue-deadlock" and rank == args.rank and i == args.step:
            # bug: shard list exhausted -> IndexError kills this daemon thread; nobody notices
            shards = list(range(args.step))
            idx = shards[i]
        q.put(idx)
        i += 1


threading.Thread(target=producer, daemon=True, name="prefetch").start()

t_last = time.time()
for step in range(args.steps):
    t_data = time.time()
    idx = q.get()
    if args.fault == "straggler" and rank == args.rank:
        # expensive per-sample augmentation on this rank only
        _ = slow_eval(300)
    t_data = time.time() - t_data
    xb, yb = X[idx], Y[idx]
    loss = nn.functional.mse_loss(ddp(xb), yb)
    opt.zero_grad()
    loss.backward()
    if args.plain:
        for p_ in model.parameters():
            dist.all_reduce(p_.grad)
            p_.grad /= world
    opt.step()
    time.sleep(args.sleep)

    metrics = {"loss": loss.detach()}
    if args.fault == "metrics-keys" and step == args.step and rank == args.rank:
        metrics["grad_norm"] = torch.tensor(1.0)  # only this rank logs grad_norm
    if step % 5 == 0:
        vec = torch.stack(list(metrics.values()))
        dist.all_reduce(vec)
        now = time.time()
        if rank == 0:
            say(f"step {step:4d} loss {vec[0].item() / world:.4f} step_time {(now - t_last) / 5:.3f}s")
        if args.fault == "straggler" and step % 10 == 0:
            times = [None] * world
            dist.all_gather_object(times, round(t_data, 3))
            if rank == 0:
                say(f"data_time per rank (s): {times}  max/min={max(times) / max(min(times), 1e-3):.1f}x")
        t_last = now

    if args.fault == "slow-eval" and step == args.step and rank == args.rank:
        say(f"running extra eval at step {step}")
        say(f"eval metric {slow_eval(2048, rounds=25):.3f}")

    if step > 0 and step % args.step == 0:
        if args.fault in ("rank0-barrier", "monitored"):
            if rank == 0:
                torch.save(model.state_dict(), f"/tmp/fz_ckpt_{os.getpid()}.pt")
                say(f"saved checkpoint at step {step}")
                if args.fault == "monitored":
                    dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
                else:
                    dist.barrier()
        elif args.fault == "monitored-skip":
            if rank != args.rank:
                dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
        else:
            dist.barrier()

say("training finished")
dist.destroy_process_group()
