"""Two/three-stage pipeline: activations forwarded with send/recv, grads sent back."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--hidden", type=int, default=64)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("pipe")

dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
if a.fault == "monitored" :
    pass
H = a.hidden
if a.fault == "hidden-cfg" and rank == a.bad_rank:
    H = 48  # this stage read a stale config file
B = 8
torch.manual_seed(rank)
stage = nn.Sequential(nn.Linear(H, H), nn.Tanh())
opt = torch.optim.SGD(stage.parameters(), lr=0.01)
log.info("stage %d/%d ready, hidden=%d, pid=%d", rank, world, H, os.getpid())
with open(f"/tmp/rr61ae_pipe_rank{rank}.pid", "w") as f:
    f.write(str(os.getpid()))
for step in range(a.steps):
    if rank == 0:
        x = torch.randn(B, H)
    else:
        x = torch.empty(B, H)
        dist.recv(x, src=rank - 1)
        x.requires_grad_(True)
    out = stage(x)
    if rank < world - 1:
        dist.send(out.detach(), dst=rank + 1)
        g = torch.empty_like(out)
        dist.recv(g, src=rank + 1)
        out.backward(g)
    else:
        loss = out.pow(2).mean()
        loss.backward()
        log.info("step %d loss %.5f", step, loss.item())
    if rank > 0:
        if a.fault == "skip-grad-send" and rank == a.bad_rank and step == a.step:
            log.info("stage %d: grad norm tiny, skipping send", rank)
        else:
            dist.send(x.grad, dst=rank - 1)
    opt.step(); opt.zero_grad()
    if a.fault == "ring-dst" and step == a.step:
        # pass the step's token count around the ring of stages
        tok = torch.tensor([B * (rank + 1)])
        if rank % 2 == 0:
            dist.send(tok, dst=rank + 1)
            dist.recv(tok, src=rank - 1 if rank > 0 else world - 1)
        else:
            dist.recv(tok, src=rank - 1)
            dist.send(tok, dst=rank + 1)
    if a.fault == "slow" and rank == a.bad_rank and step == a.step:
        time.sleep(3600)  # stuck in a blocking call
    if a.fault == "monitored" and step == a.step:
        if rank == a.bad_rank:
            log.info("stage %d: writing activation stats to disk", rank)
            time.sleep(40)  # blocking I/O on a slow NFS mount
        dist.monitored_barrier(timeout=timedelta(seconds=10))
    time.sleep(0.3)
dist.barrier()
log.info("stage %d finished", rank)
dist.destroy_process_group()
