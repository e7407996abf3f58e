"""Hand-written data-parallel training: manual gradient averaging with all_reduce.
Flags pick a fault, a rank and a step."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--pylogging", action="store_true")
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()

if a.pylogging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if a.pylogging: log.info(msg)
    else: print(msg, flush=True)

def init():
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))

init()
rank, world = dist.get_rank(), dist.get_world_size()
if a.fault == "double-init":
    # helper module "sets up distributed" again
    def setup_distributed():
        dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
    setup_distributed()
torch.manual_seed(0)
hidden = 32
model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))
if a.fault == "frozen-head" and rank == a.bad_rank:
    model[2].bias.requires_grad_(False)  # rank-local config freezes the head bias
for prm in model.parameters():
    dist.broadcast(prm.data, 0)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
warnings.warn("torch.distributed: gloo backend selected, collectives will run on CPU and may be slow", UserWarning)

n_samples = 64
if a.fault == "uneven":
    # naive sharding: last rank gets the remainder dropped -> fewer batches
    n_samples = 70
idx = list(range(rank, n_samples, world)) if a.fault != "uneven" else \
      list(range(rank * (n_samples // world), (rank + 1) * (n_samples // world) - (8 if rank == a.bad_rank else 0)))
g = torch.Generator().manual_seed(1234)
X = torch.randn(n_samples, 16, generator=g); Y = X.sum(1, keepdim=True) * 0.1
bs = 4
batches = [idx[i:i + bs] for i in range(0, len(idx), bs)][: a.steps] if a.fault != "uneven" else \
          [idx[i:i + bs] for i in range(0, len(idx), bs)]
say(f"rank {rank}/{world}: {len(batches)} batches of {bs}")

sub = None
if a.fault in ("subgroup-outside", "subgroup-ok"):
    sub = dist.new_group(ranks=[0, 1])
if a.fault == "subgroup-members-only" and rank in (0, 1):
    # only the ranks that use the stats group create it
    sub = dist.new_group(ranks=[0, 1])

it = batches
if a.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(batches, desc="train", file=sys.stdout, mininterval=0)

for step, b in enumerate(it):
    xb, yb = X[b], Y[b]
    if a.fault == "nan" and rank == a.bad_rank and step == a.step:
        xb = xb.clone(); xb[0, 0] = float("inf")   # corrupted feature value from preprocessing
    out = model(xb)
    loss = nn.functional.mse_loss(out, yb)
    opt.zero_grad()
    loss.backward()
    if a.fault == "straggle" and rank == a.bad_rank and step == a.step:
        time.sleep(a.timeout + 15)
    for prm in model.parameters():
        if a.fault == "shape" and rank == a.bad_rank and step == a.step and prm.dim() == 2:
            grad = prm.grad[: prm.grad.shape[0] // 2]  # bucketed view bug: only half
            dist.all_reduce(grad)
            continue
        dist.all_reduce(prm.grad)
        prm.grad /= world
    if a.fault == "misplaced-barrier" and rank == 0 and step == a.step:
        dist.barrier()  # "wait for rank 0 to write checkpoint" placed inside rank-0 branch
    if sub is not None and step == a.step:
        # extra statistics reduced only among ranks 0,1
        t = loss.detach().clone()
        dist.all_reduce(t, group=sub)
        if a.fault in ("subgroup-outside", "subgroup-members-only"):
            sub_rank = dist.get_rank(sub)
            shards = [None] * dist.get_world_size(sub)
            say(f"rank {rank}: subgroup rank {sub_rank}, loss_sub={t.item():.4f}")
        elif rank in (0, 1):
            say(f"rank {rank}: subgroup mean loss {t.item()/2:.4f}")
    opt.step()
    lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
    if a.fault == "nan" and not torch.isfinite(lt):
        say(f"step {step}: global loss {lt.item()}")
        raise FloatingPointError(f"Non-finite global loss {lt.item()} at step {step}; aborting")
    if rank == 0:
        msg = f"step {step} loss {lt.item():.5f}"
        if a.tqdm: it.set_postfix(loss=f"{lt.item():.4f}")
        else: say(msg)

if a.fault == "uneven":
    say(f"rank {rank}: finished epoch")
dist.barrier()
if rank == 0:
    say("training done")
if os.environ.get("NO_DESTROY") != "1": dist.destroy_process_group()
