"""Checkpoint/output writes against OS limits: small tmpfs, ulimit -f, read-only mount, unwritable dir, held lock."""
import os, sys, time, glob, fcntl, logging
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from common import base_args, init_dist

class MLP(nn.Module):
    def __init__(self, d=512, layers=4):
        super().__init__()
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(layers)]); self.head = nn.Linear(d, 8)
    def forward(self, x): return self.head(self.body(x))

def main():
    p = base_args(); p.add_argument("--ckpt-every", type=int, default=4); p.add_argument("--keep", type=int, default=3)
    p.add_argument("--width", type=int, default=512); p.add_argument("--per-rank-shards", action="store_true")
    p.add_argument("--metrics-file", default=""); p.add_argument("--lock", default=""); p.add_argument("--lock-wait", type=float, default=0)
    p.add_argument("--use-logging", action="store_true"); p.add_argument("--fileobj", action="store_true"); p.add_argument("--resume", action="store_true")
    args = p.parse_args()
    rank, world = init_dist()
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s - %(message)s")
        say = logging.getLogger("trainer").info
    else:
        say = lambda m, *a: print(f"[rank{rank}] " + (m % a if a else m), flush=True)
    torch.manual_seed(0)
    model = MLP(args.width)
    if world > 1: model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lockf = None
    if args.lock and rank == 0:
        # single-writer guard on the output directory
        lockf = open(args.lock, "w")
        t0 = time.time()
        while True:
            try:
                fcntl.flock(lockf, fcntl.LOCK_EX | fcntl.LOCK_NB); break
            except BlockingIOError:
                if time.time() - t0 > args.lock_wait: raise
                say("output dir locked by another job, retrying...")
                time.sleep(2)
        say("acquired output lock %s", args.lock)
    if world > 1: dist.barrier()
    os.makedirs(args.out, exist_ok=True)
    start = 0
    if args.resume:
        ckpts = sorted(glob.glob(f"{args.out}/ckpt-step*.pt"))
        if ckpts:
            say("resuming from %s", ckpts[-1])
            sd = torch.load(ckpts[-1], map_location="cpu")
            (model.module if world > 1 else model).load_state_dict(sd["model"]); opt.load_state_dict(sd["optim"]); start = sd["step"] + 1
            say("resumed at step %d", start)
    mf = open(args.metrics_file, "a") if (args.metrics_file and rank == 0) else None
    say("training %d params, output %s", sum(p.numel() for p in model.parameters()), args.out)
    for step in range(start, args.steps):
        x = torch.randn(32, args.width); y = torch.randint(0, 8, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        say("step %d loss %.4f", step, loss.item())
        if mf:
            mf.write(f'{{"step": {step}, "loss": {loss.item():.6f}, "hist": {torch.histc(x, 64).tolist()}}}\n' * 40); mf.flush()
        if (step + 1) % args.ckpt_every == 0:
            sd = {"model": (model.module if world > 1 else model).state_dict(), "optim": opt.state_dict(), "step": step}
            if args.per_rank_shards:
                path = f"{args.out}/step{step:05d}-rank{rank}.pt"; torch.save(sd if rank == 0 else {"optim": opt.state_dict()}, path)
                say("saved shard %s", path)
            elif rank == 0:
                path = f"{args.out}/ckpt-step{step:05d}.pt"
                if args.fileobj:
                    with open(path + ".tmp", "wb") as fh:   # atomic save: write tmp then rename
                        torch.save(sd, fh)
                    os.replace(path + ".tmp", path)
                else:
                    torch.save(sd, path)
                say("saved checkpoint %s (%.1f MB)", path, os.path.getsize(path) / 2**20)
                old = sorted(glob.glob(f"{args.out}/ckpt-step*.pt"))[:-args.keep]
                for o in old: os.remove(o)
            if world > 1: dist.barrier()
    if world > 1: dist.barrier(); dist.destroy_process_group()
    say("training complete")

if __name__ == "__main__":
    main()
