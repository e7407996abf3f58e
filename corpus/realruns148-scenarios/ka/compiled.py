"""torch.compile scenarios under DDP/gloo or single process.
--fault: none (healthy, graph breaks logged) | item_branch (fullgraph + data-dependent branch) |
         step_arg (python int step passed into compiled fn -> recompiles) | cxx (run with broken CXX env) |
         dyn_shapes (varying seq lengths, no dynamic -> recompile warnings, healthy)
"""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--fail-recompile", action="store_true")
p.add_argument("--wrap-order", default="compile_ddp", choices=["compile_ddp", "ddp_compiled"])
a = p.parse_args()

dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
else:
    rank = 0
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
log = logging.getLogger("trainer")
torch.manual_seed(0)
if a.fail_recompile:
    torch._dynamo.config.fail_on_recompile_limit_hit = True

class Block(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.fc1 = nn.Linear(d, 64); self.fc2 = nn.Linear(64, d); self.norm = nn.LayerNorm(d)
    def forward(self, x, step=None):
        h = self.fc2(torch.relu(self.fc1(self.norm(x))))
        if a.fault == "none":
            print(f"debug: activation mean {h.mean():.4f}")   # graph break: print of a tensor value
        if a.fault == "item_branch" and (a.bad_rank < 0 or rank == a.bad_rank):
            if h.abs().max().item() > 0.5:                   # data-dependent python branch
                h = h * 0.5
        if a.fault == "step_arg":
            for _ in range(self.refine_iters):               # curriculum: one more refinement pass per step
                h = h + 0.1 * torch.tanh(self.fc2(torch.relu(self.fc1(h))))
        return x + h

model = nn.Sequential(nn.Linear(8, 32), Block())
head = nn.Linear(32, 1)
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.emb = nn.Linear(8, 32); self.blk = Block(); self.head = nn.Linear(32, 1)
    def forward(self, x, step=None):
        return self.head(self.blk(self.emb(x), step)).squeeze(-1)
net = Net()
if a.wrap_order == "ddp_compiled":
    cnet = torch.compile(net, fullgraph=a.fullgraph)
    if dist_on:
        cnet = nn.parallel.DistributedDataParallel(cnet)
else:
    if dist_on:
        net = nn.parallel.DistributedDataParallel(net)
    cnet = torch.compile(net, fullgraph=a.fullgraph)
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
log.info("compiled model with torch.compile(fullgraph=%s), backend inductor", a.fullgraph)
for step in range(a.steps):
    T = 16 if a.fault != "dyn_shapes" else 8 + 4 * (step % 5)
    x = torch.randn(T, 8); y = x.sum(-1)
    t0 = time.time()
    if a.fault == "step_arg":
        blk = net.module.blk if hasattr(net, "module") else net.blk
        blk.refine_iters = 1 + step                         # curriculum schedule
    out = cnet(x)
    loss = ((out - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("step %d loss %.4f (%.2fs)", step, loss.item(), time.time() - t0)
log.info("done")
if dist_on:
    dist.destroy_process_group()
