"""Tiny DDP training whose start-up (torch.distributed init) can be misconfigured.
Run under torchrun / python -m torch.distributed.run, or plain python with env vars set by hand."""
import argparse, datetime, logging, os, sys, time, warnings
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--init", default="env://")
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--logfmt", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--data", default=None, help="optional data file (torch.save'd tensor)")
p.add_argument("--double-init", action="store_true", help="setup() helper re-initialises the group")
p.add_argument("--monitored-barrier", type=float, default=0, help="monitored barrier timeout before training")
p.add_argument("--slow-rank", type=int, default=-1)
p.add_argument("--slow-secs", type=float, default=0)
p.add_argument("--sleep", type=float, default=0.0, help="sleep per step")
p.add_argument("--noisy", action="store_true", help="print some harmless warnings")
args = p.parse_args()

if args.logfmt:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
log = logging.getLogger("train")
def info(msg):
    if args.logfmt: log.info(msg)
    else: print(msg, flush=True)

def setup():
    kw = {}
    if args.init.startswith("file://"):
        kw = dict(rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    dist.init_process_group("gloo", init_method=args.init, timeout=datetime.timedelta(seconds=args.timeout), **kw)

info(f"pid={os.getpid()} RANK={os.environ.get('RANK')} WORLD_SIZE={os.environ.get('WORLD_SIZE')} "
     f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} MASTER_PORT={os.environ.get('MASTER_PORT')} "
     f"restart={os.environ.get('TORCHELASTIC_RESTART_COUNT')}")
setup()
rank, world = dist.get_rank(), dist.get_world_size()
info(f"[rank {rank}] process group ready: backend={dist.get_backend()} world_size={world}")
if args.double_init:
    # trainer utility calls the same setup again (e.g. from a Trainer.__init__)
    setup()

if args.slow_rank == rank and args.slow_secs:
    info(f"[rank {rank}] building data index ...")
    time.sleep(args.slow_secs)
if args.monitored_barrier:
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.monitored_barrier))

torch.manual_seed(0)
if args.data:
    data = torch.load(args.data)
else:
    data = torch.randn(512, 16)
targets = data.sum(dim=1, keepdim=True)
model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if args.noisy and rank == 0:
    warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    info("WARNING: NCCL not available, falling back to gloo backend (CPU only)")
it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=80)
for step in it:
    idx = torch.arange(step * 8 + rank * 4, step * 8 + rank * 4 + 4) % data.shape[0]
    loss = nn.functional.mse_loss(model(data[idx]), targets[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    if args.sleep: time.sleep(args.sleep)
    if step % 10 == 0 or step == args.steps - 1:
        t = torch.tensor([loss.item()]); dist.all_reduce(t)
        if rank == 0:
            msg = f"step {step} loss {t.item()/world:.4f}"
            if args.tqdm: it.write(msg)
            else: info(msg)
dist.barrier()
if rank == 0:
    info("training done, saving final weights")
dist.destroy_process_group()
