"""2-stage pipeline (torch.distributed.pipelining, GPipe / 1F1B) on CPU/gloo."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe, Schedule1F1B

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--microbatches", type=int, default=4)
p.add_argument("--dim", type=int, default=32)
p.add_argument("--stage1-in", type=int, default=0, help="input width stage 1 was built with (0 = dim)")
p.add_argument("--schedule", default="gpipe")
p.add_argument("--slow-rank", type=int, default=-1)
args = p.parse_args()

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    d = args.dim
    if rank == 0:
        mod = nn.Sequential(nn.Linear(16, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
    else:
        din = args.stage1_in or d
        mod = nn.Sequential(nn.Linear(din, d), nn.ReLU(), nn.Linear(d, 4))
    stage = PipelineStage(mod, rank, world, torch.device("cpu"))
    loss_fn = lambda out, tgt: F.cross_entropy(out, tgt)
    Sched = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
    sched = Sched(stage, n_microbatches=args.microbatches, loss_fn=loss_fn)
    opt = torch.optim.SGD(mod.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        x = torch.randn(args.bs, 16, generator=g); y = torch.randint(0, 4, (args.bs,), generator=g)
        t = time.time()
        if rank == 0:
            sched.step(x)
        else:
            losses = []
            out = sched.step(target=y, losses=losses)
            print(f"[stage1] step {step} loss {torch.stack(losses).mean().item():.4f} ({time.time()-t:.2f}s)", flush=True)
        opt.step(); opt.zero_grad()
    dist.barrier()
    if rank == 0: print("pipeline training done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
