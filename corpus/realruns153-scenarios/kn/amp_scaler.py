"""fp16 autocast + GradScaler training loop on CPU (single process or DDP)."""
import argparse, os, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")   # none | rawinput | halfmodel | clipunscale
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
p.add_argument("--min-scale", type=float, default=0.0)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--lr", type=float, default=1e-2)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("amp_train")

def clip_gradients(scaler, opt, model, max_norm=1.0):
    scaler.unscale_(opt)
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log.info("rank %d/%d starting, fp16 autocast on cpu, GradScaler(init_scale=%g)", rank, world, args.init_scale)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 10))
    if args.fault == "halfmodel":
        model = model.half()   # "save memory": keep weights in fp16 as well
    m = DDP(model) if world > 1 else model
    opt = torch.optim.AdamW(m.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale)
    g = torch.Generator().manual_seed(1 + rank)
    Wt = torch.randn(32, 10, generator=torch.Generator().manual_seed(7))
    skipped = 0
    for step in range(args.steps):
        x = torch.randn(64, 32, generator=g); y = (x @ Wt).argmax(1)
        if args.fault == "rawinput" and (args.bad_rank < 0 or rank == args.bad_rank):
            x = x * 2.0e4 + 3.0e4   # features fed in raw sensor units instead of standardised
        with torch.autocast("cpu", dtype=torch.float16):
            out = m(x if args.fault != "halfmodel" else x.half())
            loss = F.cross_entropy(out.float(), y)
        scaler.scale(loss / args.accum).backward()
        if (step + 1) % args.accum == 0:
            if args.fault == "clipunscale":
                gn = clip_gradients(scaler, opt, m)
                scaler.unscale_(opt)   # unscale before logging the grad norm
            else:
                scaler.unscale_(opt)
                gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            old = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            new = scaler.get_scale()
            if new < old:
                skipped += 1
                log.warning("step %d: gradient overflow, skipping optimizer step; loss scale %g -> %g", step, old, new)
            opt.zero_grad(set_to_none=True)
            sched.step()
        log.info("step %d loss %.4f grad_norm %.4f scale %g lr %.5f", step, loss.item(), float(gn), scaler.get_scale(), sched.get_last_lr()[0])
        if args.min_scale and scaler.get_scale() < args.min_scale:
            raise FloatingPointError(f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                                     "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        time.sleep(0.03)
    log.info("done: %d steps, %d skipped", args.steps, skipped)
    if world > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
