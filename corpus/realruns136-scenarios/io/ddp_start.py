"""Tiny DDP training job; flags select start-up faults."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--backend", default=os.environ.get("DIST_BACKEND", "gloo"))
p.add_argument("--init-url", default="env://")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--find-unused", action="store_true")
args = p.parse_args()

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
        format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
    _old = logging.getLogRecordFactory()
    def _f(*a, **k):
        r = _old(*a, **k); r.rank = os.environ.get("RANK", "?"); return r
    logging.setLogRecordFactory(_f)
log = logging.getLogger("train")
def say(msg):
    if args.use_logging: log.info(msg)
    else: print(f"[rank{os.environ.get('RANK','?')}] {msg}", flush=True)

# model width may be overridden from the environment (used by sweep scripts)
HIDDEN = int(os.environ.get("MODEL_HIDDEN", "64"))

def setup():
    kw = dict(backend=args.backend, timeout=timedelta(seconds=args.pg_timeout))
    if args.init_url != "env://":
        kw["init_method"] = args.init_url
        kw["rank"] = int(os.environ["RANK"]); kw["world_size"] = int(os.environ["WORLD_SIZE"])
    dist.init_process_group(**kw)

def build_model():
    return nn.Sequential(nn.Linear(32, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 4))

def init_logging_backend():
    # only rank 0 writes TensorBoard events
    if args.fault == "import_rank0":
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package
        return SummaryWriter("runs/exp")
    return None

def main():
    if args.fault == "seed_before_init":
        # per-rank seeding moved above setup() in a refactor
        torch.manual_seed(1234 + dist.get_rank())
    say(f"starting pid={os.getpid()} backend={args.backend} init={args.init_url}")
    setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    say(f"process group ready: rank {rank}/{world}")
    if args.fault == "init_twice":
        # helper from a utils module that "makes sure" distributed is up
        def ensure_distributed():
            dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.pg_timeout))
        ensure_distributed()
    writer = init_logging_backend() if rank == 0 else None
    torch.manual_seed(0)
    model = build_model()
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", mininterval=0)
    for step in it:
        x = torch.randn(16, 32, generator=g); y = torch.randint(0, 4, (16,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0 or step == args.steps - 1:
            say(f"step {step} loss {loss.item():.4f}")
        time.sleep(0.05)
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
