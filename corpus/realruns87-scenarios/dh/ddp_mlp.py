"""Toy DDP regression trainer (gloo, CPU).  --fault selects a real bug / misconfiguration.

faults: none, shape (wrong reshape on one rank's batch), unused (branch param never used),
        desync (one rank all_reduces a metric tensor of another size), modelcfg (one rank reads
        other hidden size), segv (native crash in a ctypes helper on one rank), oom (huge buffer
        allocation under ulimit -v), stall (one rank blocks; monitored_barrier), nan (too large lr,
        stops on nan), resume (load --resume path), save (save checkpoint to --ckpt-dir),
        interrupt (long run, stopped from outside), onecycle (scheduler total_steps too small)
"""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--resume", default=None)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--find-unused", action="store_true")
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s: %(message)s")
log = logging.getLogger("train")

def say(msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(f"[rank {rank}] {msg}", flush=True)

torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden)
        self.fc2 = nn.Linear(hidden, 1)
        self.aux_head = nn.Linear(hidden, 4)   # only used when aux loss enabled
        self.use_aux = True
    def forward(self, x):
        h = torch.relu(self.fc1(x))
        out = self.fc2(h)
        if self.use_aux:
            out = out + self.aux_head(h).mean(-1, keepdim=True)
        return out

hidden = args.hidden
if args.fault == "modelcfg" and rank == args.fault_rank:
    hidden = args.hidden * 2   # this node's config file had a different value
model = Net(hidden)
if args.fault == "modelcfg" and rank == args.fault_rank:
    model.extra_norm = nn.LayerNorm(hidden)

if args.resume:
    say(f"resuming from {args.resume}")
    state = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(state["model"])

ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
sched = None
if args.fault == "onecycle":
    # steps_per_epoch computed from a stale dataset length
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.fault_step)

if args.fault == "oom" and rank == args.fault_rank:
    pass

say(f"world_size={world} hidden={hidden} params={sum(p.numel() for p in model.parameters())}")
g = torch.Generator().manual_seed(rank)
W = torch.randn(16, 1, generator=torch.Generator().manual_seed(42))

it = range(args.steps)
if args.log_style == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", mininterval=0)

for step in it:
    x = torch.randn(8, 16, generator=g)
    y = x @ W + 0.01 * torch.randn(8, 1, generator=g)
    if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
        # bug in the packing path that only this shard hits: last feature column dropped
        x = x[:, :15]
    if args.fault == "dtype" and rank == args.fault_rank and step == args.fault_step:
        # this shard's cache was written by numpy as float64 and not cast back
        import numpy as np
        x = torch.from_numpy(np.asarray(x.numpy(), dtype=np.float64))
    if args.fault == "unused" and step >= args.fault_step:
        ddp.module.use_aux = False   # aux loss warm-up schedule switches the head off
    if args.fault == "oom" and rank == args.fault_rank and step == args.fault_step:
        # feature cache sized from n_samples * seq * dim -- far too large
        cache = torch.empty(200_000, 16_384, dtype=torch.float32)
    if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
        import ctypes
        ctypes.string_at(0)   # native helper dereferences a NULL buffer
    if args.fault == "stall" and rank == args.fault_rank and step == args.fault_step:
        time.sleep(600)       # blocked on a dead NFS read
    if args.fault == "stall":
        dist.monitored_barrier(timeout=timedelta(seconds=15))
    out = ddp(x)
    loss = nn.functional.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    lt = loss.detach().clone()
    if args.fault == "desync" and rank == args.fault_rank and step == args.fault_step:
        lt = torch.stack([lt, torch.tensor(float(step))])   # new metric only added on this rank
    dist.all_reduce(lt)
    avg = lt[0].item() / world if lt.dim() else lt.item() / world
    if args.log_style == "tqdm" and rank == 0:
        it.set_postfix(loss=f"{avg:.4f}")
    else:
        say(f"step {step} loss {avg:.4f} lr {opt.param_groups[0]['lr']:.4g}")
    if args.fault == "nan" and not math.isfinite(avg):
        raise FloatingPointError(f"Loss is {avg} at step {step}, stopping training")
    if args.sleep:
        time.sleep(args.sleep)

if args.ckpt_dir and rank == 0:
    path = os.path.join(args.ckpt_dir, "last.pt")
    say(f"saving checkpoint to {path}")
    torch.save({"model": model.state_dict(), "step": args.steps}, path)
dist.barrier()
say("training finished")
dist.destroy_process_group()
