"""Resume a tiny model from per-rank checkpoint shards. --prepare writes shards (and damages one per --fault)."""
import argparse, os, sys, time, argparse as ap, shutil, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--ckpt", default="/work/rr65/aq/tmp/resume")
p.add_argument("--prepare", action="store_true")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--world", type=int, default=2)
p.add_argument("--spawn", action="store_true")
p.add_argument("--port", default="31030")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--hidden", type=int, default=32)
args = p.parse_args()

def build(hidden, layers=2):
    return nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(hidden, hidden), nn.GELU())], nn.Linear(hidden, 4))

def prepare():
    shutil.rmtree(args.ckpt, ignore_errors=True); os.makedirs(args.ckpt)
    for r in range(args.world):
        torch.manual_seed(r)
        m = build(32); o = torch.optim.AdamW(m.parameters(), lr=1e-3)
        m(torch.randn(4, 32)).sum().backward(); o.step()
        state = {"model": m.state_dict(), "optimizer": o.state_dict(), "step": 1200}
        if args.fault == "weights_only":
            state["args"] = ap.Namespace(lr=1e-3, hidden=32, data="/data/shards")  # old trainer pickled its argparse args
        if args.fault == "state_dict" and r == args.fault_rank:
            state["model"] = build(32, layers=3).state_dict()  # shard from the 3-layer sweep run
        if args.fault == "optim" and r == args.fault_rank:
            m2 = build(32); o2 = torch.optim.AdamW([{"params": list(m2.parameters())[:2]}, {"params": list(m2.parameters())[2:], "weight_decay": 0.0}])
            state["optimizer"] = o2.state_dict()
        path = os.path.join(args.ckpt, f"shard_rank{r}.pt")
        torch.save(state, path)
        if args.fault == "missing" and r == args.fault_rank:
            os.remove(path)
        if args.fault == "truncated" and r == args.fault_rank:
            sz = os.path.getsize(path)
            with open(path, "r+b") as f: f.truncate(sz // 3)  # copy interrupted by rsync timeout
        if args.fault == "lfs" and r == args.fault_rank:
            with open(path, "w") as f:
                f.write("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize %d\n" % os.path.getsize(path))
    print(f"prepared {args.world} shards in {args.ckpt} (fault={args.fault})")

def worker(rank, world):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank={rank} %(levelname)s %(message)s")
    log = logging.getLogger("resume")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    model = build(args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    path = os.path.join(args.ckpt, f"shard_rank{rank}.pt")
    log.info(f"loading checkpoint {path}")
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    start = state["step"]
    log.info(f"resumed from step {start}")
    ddp = nn.parallel.DistributedDataParallel(model)
    for step in range(start, start + args.steps):
        x = torch.randn(16, args.hidden); y = torch.randint(0, 4, (16,))
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0: log.info(f"step {step} loss {loss.item():.4f}")
        time.sleep(0.1)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.prepare:
        prepare(); sys.exit(0)
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = args.port
        mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
