"""Tiny trainer that checkpoints with torch.distributed.checkpoint (DCP) and resumes.
Flags select the fault. Launch with torchrun (gloo, CPU)."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict, StateDictOptions

p = argparse.ArgumentParser()
p.add_argument("--ckpt", required=True)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--resume", action="store_true")
p.add_argument("--wrap", default="ddp", choices=["ddp", "fsdp2", "none"])
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--extra-layer", action="store_true")
p.add_argument("--two-groups", action="store_true")
p.add_argument("--rank0-save-barrier", action="store_true")
p.add_argument("--rank0-save-monitored", action="store_true")
p.add_argument("--pad-mb", type=int, default=0, help="extra buffer size (MB) stored in ckpt")
p.add_argument("--timestamps", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
if args.timestamps:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

torch.manual_seed(0)
layers = [nn.Linear(16, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU()]
if args.extra_layer:
    layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
layers += [nn.Linear(args.hidden, 4)]
model = nn.Sequential(*layers)
if args.pad_mb:
    model.register_buffer("stats", torch.zeros(args.pad_mb * 262144))
if args.wrap == "ddp":
    model = nn.parallel.DistributedDataParallel(model)
elif args.wrap == "fsdp2":
    from torch.distributed.fsdp import fully_shard
    for m in model:
        if isinstance(m, nn.Linear):
            fully_shard(m)
    fully_shard(model)
params = list(model.parameters())
if args.two_groups:
    opt = torch.optim.AdamW([{"params": params[:2], "lr": 1e-3}, {"params": params[2:], "lr": 1e-4, "weight_decay": 0.0}])
else:
    opt = torch.optim.AdamW(params, lr=1e-3)
log(f"world_size={world} wrap={args.wrap} params={sum(p.numel() for p in params)}")

start = 0
if args.resume:
    log(f"resuming from {args.ckpt}")
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
    dcp.load(state, checkpoint_id=args.ckpt)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    start = int(state["step"])
    log(f"resumed at step {start}")

def save(step):
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "step": torch.tensor(step)}
    t = time.time()
    dcp.save(state, checkpoint_id=args.ckpt)
    log(f"saved DCP checkpoint step={step} to {args.ckpt} in {time.time()-t:.2f}s")

def save_rank0_only(step):
    # "only rank 0 writes" pattern with a full (non-sharded) state dict
    msd = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
    if rank == 0:
        os.makedirs(args.ckpt, exist_ok=True)
        torch.save({"model": msd, "optim": opt.state_dict(), "step": step}, os.path.join(args.ckpt, "full.pt"))
        log(f"rank0 wrote {args.ckpt}/full.pt")
        if args.rank0_save_monitored:
            dist.monitored_barrier(timeout=timedelta(seconds=8))
        else:
            dist.barrier()

it = range(start, start + args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", file=sys.stdout, mininterval=0)
g = torch.Generator().manual_seed(100 + rank)
for step in it:
    x = torch.randn(8, 16, generator=g)
    y = torch.randint(0, 4, (8,), generator=g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if not args.tqdm:
        log(f"step {step} loss {loss.item():.4f}")
    if (step + 1) % args.save_every == 0:
        if args.rank0_save_barrier or args.rank0_save_monitored:
            save_rank0_only(step + 1)
        else:
            save(step + 1)
dist.barrier()
log("training done")
dist.destroy_process_group()
