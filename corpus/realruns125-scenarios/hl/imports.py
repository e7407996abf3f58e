"""Family: import / package problems in a DDP launch.
--fault none|gpu-stats|removed-adamw|torch-six|tensorboard
"""
import argparse, os, sys, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from _core import setup_logging, init_dist, TinyNet, make_data

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--stats-every", type=int, default=2)
args = p.parse_args()

if args.fault == "removed-adamw":
    # old recipe code written for transformers 3.x/4.x
    from transformers import AdamW, get_linear_schedule_with_warmup

rank, ws = init_dist(timeout_s=30)
log = setup_logging(rank)
log.info("world_size=%d torch=%s", ws, torch.__version__)

writer = None
if rank == 0 and args.fault == "tensorboard":
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(log_dir="runs/tb")


def clip_grad_norm_legacy(params, max_norm):
    # vendored from an old apex/megatron utils file
    from torch._six import inf
    params = [p for p in params if p.grad is not None]
    total = torch.norm(torch.stack([p.grad.detach().norm(2) for p in params]), 2)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for p in params:
            p.grad.detach().mul_(coef)
    return total


def gpu_stats():
    # hardware monitor: only enabled on the rank that owns the monitoring slot
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    return pynvml.nvmlDeviceGetUtilizationRates(h).gpu


torch.manual_seed(0)
model = DDP(TinyNet())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = make_data(seed=rank)
bs = 32
for step in range(args.steps):
    xb, yb = x[step*bs:(step+1)*bs], y[step*bs:(step+1)*bs]
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(); loss.backward()
    if args.fault == "torch-six" and step >= args.fault_step:
        gn = clip_grad_norm_legacy(model.parameters(), 1.0)
    else:
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    log.info("step %d loss %.4f grad_norm %.3f", step, loss.item(), gn.item())
    if writer is not None:
        writer.add_scalar("loss", loss.item(), step)
    if args.fault == "gpu-stats" and rank == args.fault_rank and step == args.fault_step and step % args.stats_every == 0 or (args.fault == "gpu-stats" and rank == args.fault_rank and step == args.fault_step):
        log.info("gpu util %s%%", gpu_stats())
    time.sleep(0.2)

dist.barrier()
log.info("training done")
dist.destroy_process_group()
