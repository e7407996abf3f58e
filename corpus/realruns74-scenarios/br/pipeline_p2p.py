"""Naive GPipe-style pipeline: each rank is one stage, activations/grads moved with batch_isend_irecv (gloo)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--micro", type=int, default=4)
p.add_argument("--mb-size", type=int, default=8)
p.add_argument("--hidden", type=int, default=int(os.environ.get("PP_HIDDEN", "64")))
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--timeout", type=int, default=20)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
H = args.hidden
if args.fault == "hidden" and rank == args.fault_rank:
    H = int(H * 1.5)  # this stage was given the config of the wider model variant
first, last = rank == 0, rank == world - 1
torch.manual_seed(100 + rank)
stage = nn.Sequential(nn.Linear(H, H), nn.Tanh()) if not last else nn.Linear(H, 1)
opt = torch.optim.SGD(stage.parameters(), lr=0.01, momentum=0.9)
print(f"[stage {rank}/{world}] params={sum(p.numel() for p in stage.parameters())} hidden={H}", flush=True)
if rank == 0:
    warnings.warn("torch.distributed P2POp with gloo is experimental; falling back to synchronous pairs")

def run_step(step):
    mb = args.mb_size
    if args.fault == "bigbatch" and rank == args.fault_rank and step >= args.fault_step:
        # eval-size buffer preallocated with the dataset length instead of the micro-batch size
        mb = 400_000_000
    inputs, outputs = [], []
    for m in range(args.micro):
        if first:
            x = torch.randn(args.mb_size, H)
        else:
            x = torch.empty(mb, H)
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, x, rank - 1)])
            for r in reqs: r.wait()
            x = x[:args.mb_size]
            x.requires_grad_(True)
        if args.fault == "deadlock" and rank == args.fault_rank and step >= args.fault_step:
            time.sleep(3600)  # stand-in for a stage blocked on a lock in its data hook
        y = stage(x)
        inputs.append(x); outputs.append(y)
        if not last:
            ops = [dist.P2POp(dist.isend, y.detach().contiguous(), rank + 1)]
            for r in dist.batch_isend_irecv(ops): r.wait()
    losses = []
    for m in reversed(range(args.micro)):
        y = outputs[m]
        if last:
            loss = (y.float() - 1.0).pow(2).mean() / args.micro
            loss.backward(); losses.append(loss.item())
        else:
            g = torch.empty_like(y)
            for r in dist.batch_isend_irecv([dist.P2POp(dist.irecv, g, rank + 1)]): r.wait()
            y.backward(g)
        if not first:
            ops = [dist.P2POp(dist.isend, inputs[m].grad.contiguous(), rank - 1)]
            for r in dist.batch_isend_irecv(ops): r.wait()
    opt.step(); opt.zero_grad()
    return sum(losses)

it = range(args.steps)
if args.tqdm and last:
    from tqdm import tqdm
    it = tqdm(it, desc=f"pp-stage{rank}", file=sys.stdout, mininterval=0)
for step in it:
    l = run_step(step)
    if last and not args.tqdm:
        print(f"[stage {rank}] step {step} loss {l:.5f}", flush=True)
    if os.environ.get("PP_PIDFILE") and step == 0:
        open(f"{os.environ['PP_PIDFILE']}.{rank}", "w").write(str(os.getpid()))
    time.sleep(0.15)
dist.barrier()
print(f"[stage {rank}] finished {args.steps} steps", flush=True)
dist.destroy_process_group()
