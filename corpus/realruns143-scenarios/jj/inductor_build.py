"""Compiled MLP-regressor training (plain / DDP / FSDP2) for Inductor build-environment faults.
Faults come from the environment the run is given (CXX, PATH, cache dir) or from --cache-template."""
import argparse, os, sys, time, logging, datetime, warnings
# per-rank Inductor cache: must be in the environment before torch is imported
_ct = [a.split("=", 1)[1] if "=" in a else sys.argv[i + 2] for i, a in enumerate(sys.argv[1:]) if a.startswith("--cache-template")]
if _ct:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _ct[0].format(rank=os.environ.get("RANK", "0"))
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--wrap", default="none", choices=["none", "ddp", "fsdp2"])
p.add_argument("--steps", type=int, default=10)
p.add_argument("--cache-template", default=None, help="per-rank inductor cache dir, e.g. /x/cache/rank{rank}")
p.add_argument("--compile-mode", default=None)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--fmt", default="plain", choices=["plain", "logging", "tqdm"])
p.add_argument("--noisy", action="store_true", help="print extra metrics / deprecation noise")
p.add_argument("--export", default=None, help="save weights here and reload them into a fresh model for export")
p.add_argument("--print-every", type=int, default=1)
p.add_argument("--eval-every", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}/{world}] %(message)s")
log = logging.getLogger("trainer")
def say(m):
    if args.fmt == "logging": log.info(m)
    else: print(f"[rank {rank}] {m}" if world > 1 else m, flush=True)

class MLP(nn.Module):
    def __init__(self, d_in=32, d=128, n=3):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.layers = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.SiLU()) for _ in range(n)])
        self.out = nn.Linear(d, 1)
    def forward(self, x):
        h = self.inp(x)
        for l in self.layers:
            h = h + l(h)
        return self.out(h).squeeze(-1)

torch.manual_seed(0)
model = MLP()
if args.wrap == "ddp":
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model)
elif args.wrap == "fsdp2":
    from torch.distributed.fsdp import fully_shard
    for l in model.layers:
        fully_shard(l)
    fully_shard(model)
say(f"model ready wrap={args.wrap} cache={os.environ.get('TORCHINDUCTOR_CACHE_DIR')}")
cmodel = torch.compile(model, mode=args.compile_mode, fullgraph=args.fullgraph)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(100 + rank)
w_true = torch.randn(32, generator=torch.Generator().manual_seed(7))
it = range(args.steps)
if args.fmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc="train", file=sys.stderr, mininterval=0)
for step in it:
    x = torch.randn(16, 32, generator=g)
    y = x @ w_true + 0.1 * torch.randn(16, generator=g)
    t0 = time.time()
    pred = cmodel(x)
    loss = F.mse_loss(pred, y)
    opt.zero_grad(); loss.backward(); opt.step()
    if args.noisy and step == 1:
        warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    if args.fmt == "tqdm":
        it.set_postfix(loss=f"{loss.item():.4f}")
    elif step % args.print_every == 0:
        say(f"step {step:3d} | mse {loss.item():.4f} | {time.time()-t0:.2f}s/it")
    if args.eval_every and (step + 1) % args.eval_every == 0:
        with torch.no_grad():
            cmodel.eval(); xv = torch.randn(64, 32, generator=g)
            ev = F.mse_loss(cmodel(xv), xv @ w_true).item(); cmodel.train()
        say(f"eval step {step} val_mse {ev:.4f}")
if args.export and rank == 0:
    torch.save(cmodel.state_dict(), args.export)
    say(f"saved weights to {args.export}")
    fresh = MLP()
    fresh.load_state_dict(torch.load(args.export))
    say("export model loaded")
say("done")
if world > 1:
    dist.barrier(); dist.destroy_process_group()
