"""Family: choosing / writing a torch.compile backend (custom backend wrapping inductor, backend names)."""
import argparse, os, sys, time
import torch, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, os.path.dirname(__file__))
from common import MLP, feat_batch, init_dist, setup_logging, avg_loss

p = argparse.ArgumentParser()
p.add_argument("--backend", default="op_report")
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()


def op_report(gm: torch.fx.GraphModule, example_inputs):
    """Print a small report of the captured graph (ops and activation sizes), then hand it to inductor."""
    from torch._inductor.compile_fx import compile_fx
    n_ops, act_numel = 0, 0
    for node in gm.graph.nodes:
        if node.op == "call_function":
            n_ops += 1
        # activation footprint of every node
        act_numel += node.meta["example_value"].numel()
    print(f"[op_report] graph with {n_ops} ops, {act_numel} activation elements", flush=True)
    return compile_fx(gm, example_inputs)


rank, world = init_dist(timeout_s=45)
log = setup_logging(rank)
torch.manual_seed(0)
model = MLP()
if world > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
backend = op_report if args.backend == "op_report" else args.backend
cmodel = torch.compile(model, backend=backend)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
log.info("backend=%s world=%d", args.backend, world)
for step in range(args.steps):
    x, y = feat_batch(step, rank=rank)
    loss = F.cross_entropy(cmodel(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    l = avg_loss(loss, world)
    if rank == 0:
        log.info("step %d loss %.4f", step, l)
if world > 1:
    dist.destroy_process_group()
