"""Regression MLP trained with CPU autocast(float16) + torch.amp.GradScaler, optional DDP via torchrun.

The loop follows the fairseq/Megatron pattern: detect skipped steps from the scale change and stop
when the loss scale falls under --min-loss-scale.
"""
import argparse, os, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--target-unit", type=float, default=1.0, help="multiply regression targets (units)")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
p.add_argument("--min-loss-scale", type=float, default=1e-4)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
log = logging.getLogger("amp_train")

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank = dist.get_rank() if distributed else 0

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(24, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, growth_interval=20)
w_true = torch.randn(24, 1, generator=torch.Generator().manual_seed(3))

if rank == 0:
    log.info("fp16 autocast on CPU, GradScaler(init_scale=%g, growth_interval=20), target unit x%g",
             args.init_scale, args.target_unit)
skipped = 0
g = torch.Generator().manual_seed(10 + rank)
for step in range(args.steps):
    x = torch.randn(256, 24, generator=g)
    y = (x @ w_true + 0.1 * torch.randn(256, 1, generator=g)) * args.target_unit
    with torch.autocast("cpu", dtype=torch.float16):
        pred = model(x)
        loss = F.mse_loss(pred.float(), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scale_before = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    scale_after = scaler.get_scale()
    if scale_after < scale_before:
        skipped += 1
        if rank == 0:
            log.warning("gradient overflow at step %d, skipping update; loss scale %g -> %g",
                        step, scale_before, scale_after)
        if scale_after < args.min_loss_scale:
            raise FloatingPointError(
                f"Minimum loss scale reached ({args.min_loss_scale}). Your loss is probably exploding. "
                "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
    if rank == 0 and step % 5 == 0:
        log.info("step %d | loss %.4f | loss_scale %g | skipped %d", step, loss.item(), scale_after, skipped)
    time.sleep(0.05)

if rank == 0:
    log.info("done: %d steps, %d skipped, final loss %.4f, final scale %g", args.steps, skipped, loss.item(),
             scaler.get_scale())
if distributed:
    dist.destroy_process_group()
