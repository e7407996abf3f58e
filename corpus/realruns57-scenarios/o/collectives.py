"""Small DDP-ish training loop on gloo with selectable collective-level faults.
Usage: torchrun --nproc-per-node N collectives.py --fault F --fault-rank R --fault-step S
"""
import argparse, os, sys, time, json, signal, logging, warnings
from datetime import timedelta
import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--ts-logging", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--ckpt-dir", default="/work/rr57/o/tmp/ckpt")
p.add_argument("--shard-dir", default="/work/rr57/o/tmp/shards")
p.add_argument("--ddp", action="store_true")
p.add_argument("--unicode-metrics", action="store_true")
p.add_argument("--no-aux-head", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--find-unused", action="store_true")
args = p.parse_args()

if args.ts_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
rank_env = os.environ.get("RANK", "?")
class RF(logging.Filter):
    def filter(self, r):
        r.rank = rank_env; return True
log = logging.getLogger("train")
log.addFilter(RF())
def say(msg):
    if args.ts_logging: log.info(msg)
    else: print(msg, flush=True)

torch.manual_seed(0)
dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
if args.fault == "init_twice":
    # config helper re-initialises the group "to be safe"
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
say(f"initialized rank {rank}/{world} backend={dist.get_backend()} master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")

class Net(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1 = nn.Linear(16, h); self.fc2 = nn.Linear(h, 4)
        self.aux = None if args.no_aux_head else nn.Linear(h, 4)
    def forward(self, x, use_aux=False):
        z = torch.relu(self.fc1(x))
        return self.aux(z) if use_aux else self.fc2(z)

hidden = args.hidden
if args.fault == "model_mismatch" and rank == args.fault_rank:
    hidden = int(os.environ.get("HIDDEN_OVERRIDE", hidden * 2))  # stale env var on one host
model = Net(hidden)
if args.ddp:
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
opt = torch.optim.SGD(model.parameters(), lr=0.05)

# per-rank data shard
shard_path = os.path.join(args.shard_dir, f"shard-{rank:05d}.pt")
if args.fault in ("missing_shard",):
    data = torch.load(shard_path)
else:
    g = torch.Generator().manual_seed(rank)
    data = {"x": torch.randn(64, 16, generator=g), "y": torch.randint(0, 4, (64,), generator=g)}

if args.fault == "store_wait":
    store = dist.distributed_c10d._get_default_store()
    if rank == args.fault_rank:
        # this rank builds the token cache for everyone, then publishes it
        for i in range(5):
            say(f"rank {rank}: building token cache chunk {i+1}/5 ...")
            time.sleep((args.timeout + 10) / 5)
        store.set("token_cache_ready", "1")
    else:
        store.wait(["token_cache_ready"], timedelta(seconds=args.timeout))

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)

if args.fault == "oom_gather" and rank == args.fault_rank:
    pass

for step in it:
    xb = data["x"][(step * 8) % 64:(step * 8) % 64 + 8]
    yb = data["y"][(step * 8) % 64:(step * 8) % 64 + 8]
    out = model(xb, use_aux=(args.fault == "unused_param" and step % 2 == 1))
    loss = nn.functional.cross_entropy(out, yb)
    opt.zero_grad(); loss.backward()
    if not args.ddp:
        for prm in model.parameters():
            if prm.grad is None:
                continue
            dist.all_reduce(prm.grad); prm.grad /= world
    opt.step()
    # metrics sync
    stats = torch.tensor([loss.item(), float(yb.numel())])
    f = args.fault if rank == args.fault_rank and step == args.fault_step else "none"
    if f == "size_mismatch":
        # this rank appends its grad-norm to the metrics vector (added in a local patch)
        gn = torch.stack([p_.grad.norm() for p_ in model.parameters() if p_.grad is not None]).norm()
        stats = torch.cat([stats, gn.reshape(1)])
    if f == "dtype_mismatch":
        stats = stats.double()  # numpy-derived metrics on this rank
    if f == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if f == "exit_early":
        say(f"rank {rank}: no more batches in shard, leaving loop")
        break
    if f == "slow":
        time.sleep(args.timeout + 15)
    if f == "keyerror":
        lr_sched = {"warmup": 10, "decay": 0.9}
        stats[0] = stats[0] * lr_sched["warmup_ratio"]
    if f == "alloc":
        # preallocate a gather buffer sized by total tokens (bug: multiplied by vocab)
        buf = torch.empty(world * 64 * 50257 * 4096, dtype=torch.float32)
    if args.fault == "monitored" and rank == args.fault_rank and step == args.fault_step:
        time.sleep(args.timeout + 15)
    if args.fault == "monitored" and step == args.fault_step:
        dist.monitored_barrier(timeout=timedelta(seconds=args.timeout), wait_all_ranks=True)
    if f == "bad_op":
        pass
    if args.fault == "bad_op" and step == args.fault_step:
        out_t = torch.empty(2)
        dist.reduce_scatter_tensor(out_t, torch.arange(2 * world, dtype=torch.float32))
    if args.fault == "gather_sizes" and step == args.fault_step:
        n = 4 + (1 if rank == args.fault_rank else 0)
        parts = [torch.empty(4) for _ in range(world)]
        dist.all_gather(parts, torch.full((n,), float(rank)))
    dist.all_reduce(stats)
    if args.step_sleep:
        time.sleep(args.step_sleep)
    if args.fault == "bcast" and step == args.fault_step:
        t = torch.zeros(3) if rank != 0 else torch.arange(4.0)
        if rank == args.fault_rank and rank != 0:
            t = torch.zeros(4, dtype=torch.int64)
        dist.broadcast(t, src=0)
    if rank == 0 and not args.tqdm:
        if args.unicode_metrics:
            say(f"step {step} │ loss {stats[0].item()/world:.4f} │ Δt {args.step_sleep:.2f}s │ samples {int(stats[1].item())}")
        else:
            say(f"step {step} loss {stats[0].item()/world:.4f} samples {int(stats[1].item())}")
    if args.fault == "save_ro" and step == args.fault_step and rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.ckpt_dir, f"step{step}.pt"))
        say(f"saved checkpoint step{step}")

dist.barrier()
if rank == 0:
    os.makedirs(args.ckpt_dir, exist_ok=True)
    with open(os.path.join(args.ckpt_dir, "final.pt"), "wb") as fh:
        torch.save(model.state_dict(), fh)
    say("training finished, saved final.pt")
dist.destroy_process_group()
