"""Mixed-precision family on CPU: torch.autocast(float16) + torch.amp.GradScaler('cpu').
--fault none: normal run; the first iterations overflow at the initial 65536 scale and are skipped.
--fault fp16zloss: the z-loss is squared in fp16 inside the autocast region; with un-normalised inputs the
  logits exceed 256 so logits*logits overflows to inf every step -> every step is skipped, the scale keeps halving."""
import argparse, os, sys, time, math
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, cleanup

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--min-scale", type=float, default=1.0)
p.add_argument("--init-scale", type=float, default=2.**16)
p.add_argument("--input-scale", type=float, default=1.0)
args = p.parse_args()

def main():
    rank, world = setup(60)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, growth_interval=20)
    g = torch.Generator().manual_seed(rank)
    W = torch.randn(64, 10, generator=torch.Generator().manual_seed(5))
    skipped = 0; t0 = time.time()
    if rank == 0:
        print(f"> mixed precision: fp16 autocast on cpu, dynamic loss scaling (initial scale {scaler.get_scale():.1f})", flush=True)
    for it in range(1, args.steps + 1):
        x = torch.randn(256, 64, generator=g); y = (x @ W).argmax(-1); x = x * args.input_scale
        with torch.autocast("cpu", dtype=torch.float16):
            logits = net(x)
            aux = logits * logits if args.fault == "fp16zloss" else logits.float().pow(2)   # z-loss term
        ce = F.cross_entropy(logits.float(), y, reduction="sum" if args.fault == "sumce" else "mean")
        if args.fault == "fp16zloss":
            z = aux.float().mean() * 1e-4   # squared in half precision inside the autocast region
        else:
            z = aux.mean() * 1e-4
        loss = ce + z
        opt.zero_grad(set_to_none=True)
        scale_before = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        scaler.step(opt); scaler.update()
        if scaler.get_scale() < args.min_scale:   # like Megatron's DynamicGradScaler(min_scale=...)
            scaler.update(new_scale=args.min_scale)
        if not math.isfinite(gn.item()):
            skipped += 1
        if it % args.log_every == 0 and rank == 0:
            ms = (time.time() - t0) * 1000 / it
            print(f" iteration {it:6d}/{args.steps:6d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: 1.000E-03 | lm loss: {ce.item():.6E} | loss scale: {scaler.get_scale():.6g} | grad norm: {gn.item():.3f} | number of skipped iterations: {skipped:3d} | number of nan iterations:   0 |", flush=True)
    if rank == 0: print("[after training is done] exiting", flush=True)
    cleanup()

if __name__ == "__main__":
    main()
