"""2x2 data/tensor-parallel grid with process subgroups (new_group) on gloo."""
import argparse, os, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=3)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--timeout", type=int, default=20)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 4, "this script expects 4 ranks (2 dp x 2 tp)"
print(f"[rank{rank}] init ok world={world}", flush=True)

def build_groups():
    dp_groups, tp_groups = {}, {}
    global first_dp
    spec = [("dp", [0, 1]), ("dp", [2, 3]), ("tp", [0, 2]), ("tp", [1, 3])]
    if args.fault == "order" and rank == args.fault_rank:
        # this rank's code path builds TP groups first (refactor in one branch only)
        spec = spec[2:] + spec[:2]
    for kind, ranks in spec:
        g = dist.new_group(ranks, timeout=timedelta(seconds=args.timeout))
        if ranks == [0, 1]:
            first_dp = g
        if rank in ranks:
            (dp_groups if kind == "dp" else tp_groups)[kind] = (g, ranks)
    return dp_groups["dp"], tp_groups["tp"]

(dp_group, dp_ranks), (tp_group, tp_ranks) = build_groups()
print(f"[rank{rank}] dp_ranks={dp_ranks} tp_ranks={tp_ranks}", flush=True)

torch.manual_seed(rank)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for prm in model.parameters():
    dist.broadcast(prm.data, src=dp_ranks[0], group=dp_group)

other_dp_group = None
for step in range(args.steps):
    x = torch.randn(8, 16); y = x[:, :1] * 2
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward()
    g = dp_group
    if args.fault == "wronggroup" and rank == args.fault_rank and step >= args.fault_step:
        # bug: reuses the group handle of the *first* dp group for every rank
        g = first_dp
    for prm in model.parameters():
        dist.all_reduce(prm.grad, group=g)
        prm.grad /= len(dp_ranks)
    opt.step()
    # tensor-parallel style sync of the loss for logging
    t = torch.tensor([loss.item()])
    dist.all_reduce(t, group=tp_group)
    if args.fault == "nonmember_ok" and step == 0:
        # health-check helper pings the first dp group from every rank
        dist.all_reduce(torch.ones(1), group=first_dp)
    print(f"[rank{rank}] step {step} loss {loss.item():.4f} tp_mean {t.item()/2:.4f}", flush=True)
    time.sleep(0.1)
if args.fault == "slow_eval" and rank == args.fault_rank:
    # rank-local eval shard is 10x larger than the others (unbalanced split)
    print(f"[rank{rank}] running eval on local shard (12000 samples)", flush=True)
    for i in range(12000):
        time.sleep(0.005)
dist.monitored_barrier(timeout=timedelta(seconds=args.timeout), wait_all_ranks=True)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
