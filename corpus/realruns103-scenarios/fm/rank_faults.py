"""DDP training loop (torchrun or mp.spawn) with per-rank process/OS faults."""
import argparse, os, sys, time, ctypes, resource, signal, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--spawn", type=int, default=0, help="launch N ranks with mp.spawn")
p.add_argument("--port", type=int, default=42860)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=4)
p.add_argument("--as-limit-mb", type=int, default=0)
p.add_argument("--width", type=int, default=256)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--logfmt", default="print")
p.add_argument("--handle-usr1", action="store_true")
args = p.parse_args()

def build_model(width):
    return nn.Sequential(nn.Linear(64, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10))

class Cfg(dict):
    """nested experiment config; parent links let sub-configs look up defaults"""
    def lookup(self, key):
        if key in self: return self[key]
        return self["_parent"].lookup(key)

def worker(rank, world):
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    out = (lambda m: logging.info(m)) if args.logfmt == "logging" else (lambda m: print(m, flush=True))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(build_model(args.width))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.handle_usr1:
        def on_usr1(sig, frm):
            out(f"[rank {rank}] caught SIGUSR1 -> will checkpoint at end of step")
        signal.signal(signal.SIGUSR1, on_usr1)
    if args.as_limit_mb and rank == args.fault_rank:
        soft = args.as_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        out(f"[rank {rank}] address-space limit set to {args.as_limit_mb} MiB (site policy for shared login nodes)")
    out(f"[rank {rank}/{world}] pid {os.getpid()} ready")
    cfg = Cfg(lr=1e-3, batch=32)
    for step in range(args.steps):
        batch = 32
        if rank == args.fault_rank and step == args.fault_step:
            if args.fault == "native_abort":
                # native helper library hits an internal assertion
                ctypes.CDLL("libc.so.6").abort()
            if args.fault == "native_segv":
                ctypes.memset(0, 0, 64)
            if args.fault == "eval_big_batch":
                batch = 32 * 4096  # evaluation pass uses the full validation split at once
            if args.fault == "recursion":
                # config inheritance chain built from a list of overrides, one level per override
                c = cfg
                for i in range(5000):
                    c = Cfg(_parent=c, **{f"override_{i}": i})
                out(f"[rank {rank}] resolved lr={c.lookup('lr')}")
        x = torch.randn(batch, 64)
        y = torch.randint(0, 10, (batch,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if args.step_sleep: time.sleep(args.step_sleep)
        if rank == 0:
            out(f"step {step:3d}/{args.steps} loss={loss.item():.4f} lr={opt.param_groups[0]['lr']:.1e}")
        if args.ckpt_dir and rank == 0 and (step + 1) % args.ckpt_every == 0:
            path = os.path.join(args.ckpt_dir, f"step_{step+1:05d}.pt")
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step + 1}, path)
            out(f"saved checkpoint {path}")
        if args.ckpt_dir:
            dist.barrier()
    dist.barrier()
    out(f"[rank {rank}] done")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
