"""DDP training launched with torch.multiprocessing.spawn (gloo, CPU).
Flags: --fault {none,shape,unused,nan,slowbarrier,pidfile,ckptmissing} --bad-rank R --bad-step S --world W --port P
"""
import argparse, os, sys, time, logging, warnings, datetime
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

class Net(nn.Module):
    def __init__(self, d_in=32, hidden=64, aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)
        self.aux_head = nn.Linear(hidden, 4) if aux else None
    def forward(self, x, use_aux=False):
        h = self.body(x)
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            out = out + self.aux_head(h).mean(1, keepdim=True)
        return out

def worker(rank, a):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("train")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=a.world, timeout=datetime.timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    d_in = 32
    if a.fault == "shape" and rank == a.bad_rank:
        d_in_data = 48   # this rank's shard was preprocessed with the new feature set
    else:
        d_in_data = d_in
    model = Net(d_in, aux=(a.fault == "unused"))
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=a.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    g = torch.Generator().manual_seed(rank)
    if a.fault == "pidfile":
        open(f"pid.rank{rank}", "w").write(str(os.getpid()))
    if a.fault == "none" and rank == 0:
        sched.step()  # stepped before the first optimizer.step(): torch warns
    for step in range(a.steps):
        x = torch.randn(32, d_in_data, generator=g)
        y = x[:, :1] * 2.0 + 0.1 * torch.randn(32, 1, generator=g)
        if a.fault == "nan" and rank == a.bad_rank and step == a.bad_step:
            x[3, 5] = float("inf")   # a corrupted feature row coming from this rank's shard
        if a.fault == "stall" and rank == a.bad_rank and step == a.bad_step:
            log.info("rank %d: refreshing data cache ...", rank)
            time.sleep(a.pg_timeout * 3)
        out = ddp(x, use_aux=False)
        loss = nn.functional.mse_loss(out, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step} on rank {rank}")
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if step % 5 == 0:
            log.info("step %d loss %.4f lr %.2e", step, loss.item(), sched.get_last_lr()[0])
        if a.fault == "slowbarrier" and rank == a.bad_rank and step == a.bad_step + 100:
            pass
        if a.fault == "slowbarrier" and step % 10 == 9:
            if rank == a.bad_rank and step >= a.bad_step:
                log.info("rank %d: writing eval shard before sync ...", rank)
                time.sleep(a.pg_timeout * 3)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=a.pg_timeout))
        time.sleep(a.sleep)
    dist.barrier()
    if rank == 0:
        log.info("training done")
    dist.destroy_process_group()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="none"); ap.add_argument("--bad-rank", type=int, default=1)
    ap.add_argument("--bad-step", type=int, default=7); ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--port", type=int, default=46680); ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=1e-2); ap.add_argument("--sleep", type=float, default=0.05)
    ap.add_argument("--pg-timeout", type=int, default=20)
    a = ap.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.world, join=True)

if __name__ == "__main__":
    main()
