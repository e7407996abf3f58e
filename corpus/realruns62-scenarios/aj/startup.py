"""Start-up failure scenarios: imports, version checks, config, device, world size."""
import argparse, os, sys, time, logging
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=-1, help="rank that hits the fault (-1 = all)")
p.add_argument("--config", default="/work/rr62/aj/cfg/train.yaml")
p.add_argument("--device", default="cpu")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--max-world", type=int, default=8)
p.add_argument("--tp", type=int, default=0, help="tensor-parallel split of heads (0=world)")
p.add_argument("--logfmt", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

if args.logfmt:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(m):
    if args.logfmt: log.info(m)
    else: print(m, flush=True)

import torch, torch.nn as nn, torch.distributed as dist
rank_env = int(os.environ.get("RANK", "0"))
me = args.rank < 0 or args.rank == rank_env

# optional imports
if args.fault == "tb-missing" and me:
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter("/work/rr62/aj/runs")
if args.fault == "ds-missing":
    try:
        import deepspeed
        HAS_DS = True
    except ImportError:
        HAS_DS = False
    if not HAS_DS and me:
        import deepspeed.ops.adam  # needed for FusedAdam below
if args.fault == "version-check":
    from transformers.utils.versions import require_version
    require_version("torch>=2.14", "To fix: pip install -U torch (this script uses torch 2.14 FlexAttention APIs)")
if args.fault == "import-removed":
    from transformers import AdamW, get_linear_schedule_with_warmup

import yaml
with open(args.config) as f:
    cfg = yaml.safe_load(f)
say(f"[rank {rank_env}] loaded config {args.config}: {cfg}")

if args.fault == "no-env":
    pass
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
say(f"[rank {rank}] process group ready, world_size={world}")
if args.fault == "init-twice":
    # helper "setup_distributed()" called again by the trainer
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))

if world > args.max_world:
    raise SystemExit(f"this recipe supports at most {args.max_world} processes, got world_size={world}")

n_head = cfg.get("n_head", 4); d = cfg.get("d_model", 64)
tp = args.tp or world
class TPAttention(nn.Module):
    def __init__(s):
        super().__init__()
        assert n_head % tp == 0, f"n_head ({n_head}) must be divisible by tensor parallel size ({tp})"
        s.local_heads = n_head // tp
        s.qkv = nn.Linear(d, 3 * d // tp)
        s.out = nn.Linear(d // tp, d)
    def forward(s, x):
        return s.out(torch.relu(s.qkv(x)[..., : d // tp]))
model = nn.Sequential(nn.Linear(16, d), TPAttention(), nn.Linear(d, 1))
device = torch.device(args.device if me else "cpu")
model = model.to(device)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
if args.fault == "noisy":
    import warnings
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        warnings.warn(f"TensorBoard unavailable ({e}); falling back to stdout metrics")
    sched.step()  # warm-start the schedule (before the first optimizer.step)

# data shard per rank: files are assigned round robin
files = sorted(cfg.get("shards", ["a", "b", "c", "d"]))
mine = files[rank::world]
from torch.utils.data import TensorDataset, DataLoader
g = torch.Generator().manual_seed(rank)
xs = torch.randn(len(mine) * 32, 16, generator=g)
ds = TensorDataset(xs, xs.sum(1, keepdim=True))
dl = DataLoader(ds, batch_size=8, shuffle=True)
say(f"[rank {rank}] shards={mine} samples={len(ds)}")
it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", disable=rank != 0)
step = 0
for step in it:
    for xb, yb in dl:
        loss = nn.functional.mse_loss(model(xb.to(device)), yb.to(device))
        opt.zero_grad(); loss.backward()
        for p_ in model.parameters():
            dist.all_reduce(p_.grad); p_.grad /= world
        opt.step()
        break
    sched.step()
    if rank == 0 and step % 5 == 0:
        say(f"step {step} loss {loss.item():.4f}")
dist.barrier()
say(f"[rank {rank}] done")
dist.destroy_process_group()
