"""DDP toy regression trainer that uses rich for logging, tracebacks and progress."""
import argparse, logging, os, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from rich.logging import RichHandler
from rich.progress import Progress, BarColumn, TimeElapsedColumn, TextColumn
from rich.traceback import install

install(show_locals=False, width=110)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "shape", "unused", "metric_sync", "attr", "pidfile"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--find-unused", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level="INFO", format="%(message)s", datefmt="[%X]",
                    handlers=[RichHandler(rich_tracebacks=True, show_path=True)])
log = logging.getLogger(f"train.rank{rank}")

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, d_in=32, d_hid=64):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, d_hid), nn.GELU(), nn.Linear(d_hid, d_hid))
        self.head = nn.Linear(d_hid, 1)
        self.aux_head = nn.Linear(d_hid, 1)  # only used when aux loss is enabled

    def forward(self, x, use_aux=True):
        h = self.enc(x)
        out = self.head(h)
        if use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out

    def sample_predictions(self, n=4):
        with torch.no_grad():
            return self(torch.randn(n, 32))


model = Net()
ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
log.info(f"rank {rank}/{world} ready, params={sum(p.numel() for p in model.parameters())}")
if args.fault == "pidfile":
    with open(f"rank{rank}.pid", "w") as f:
        f.write(str(os.getpid()))

feat_dim = 32
with Progress(TextColumn("[bold]rank %d epoch 0" % rank), BarColumn(), TextColumn("{task.completed}/{task.total}"),
              TimeElapsedColumn(), disable=(rank != 0)) as prog:
    task = prog.add_task("train", total=args.steps)
    for step in range(args.steps):
        if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
            feat_dim = 33  # bug: this shard's feature file was written with an extra column
        x = torch.randn(16, feat_dim)
        y = x[:, :8].sum(1, keepdim=True)
        use_aux = not (args.fault == "unused" and step >= args.fault_step)  # aux loss warm-down disables the head
        if args.fault == "none" and step == 0:
            sched.step()  # scheduler stepped before optimizer: emits the usual UserWarning
        out = ddp(x, use_aux=use_aux)
        loss = nn.functional.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step(); sched.step()
        stat = torch.tensor([loss.item()])
        if args.fault == "metric_sync" and rank == args.fault_rank and step == args.fault_step:
            stat = torch.tensor([loss.item(), gn.item()])  # this rank also logs grad norm
        dist.all_reduce(stat)
        if rank == 0:
            log.info(f"step {step:3d} loss={stat[0].item()/world:.4f} grad_norm={gn.item():.3f} lr={sched.get_last_lr()[0]:.2e}")
        if args.fault == "attr" and step == args.fault_step and rank == args.fault_rank:
            preds = ddp.sample_predictions()
            log.info(f"sample preds {preds.squeeze().tolist()}")
        if args.fault == "pidfile":
            time.sleep(1.0)
        prog.advance(task)

if rank == 0:
    torch.save(model.state_dict(), "/tmp/rr105fq_rich_final.pt")
    log.info("training finished, checkpoint written")
dist.destroy_process_group()
