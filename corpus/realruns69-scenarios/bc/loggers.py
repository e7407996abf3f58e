"""DDP trainer with metric loggers on rank 0 (JSON lines, CSV, TensorBoard, W&B).

--logger: json | csv | tb | wandb | none
--fault:
  none            healthy
  json_tensor     rank 0 writes the metrics dict with the loss *tensor* (not .item()) to metrics.jsonl
  (other faults are environmental: output dir not writable, package missing, no W&B credentials)
"""
import argparse, os, sys, time, json, csv
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--logger", default="json")
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/tmp/bc_runs/exp1")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--log-from-step", type=int, default=0)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1


class Logger:
    def __init__(self, kind, out):
        self.kind = kind
        if kind == "none":
            return
        os.makedirs(out, exist_ok=True)
        if kind == "json":
            self.f = open(os.path.join(out, "metrics.jsonl"), "a")
        elif kind == "csv":
            self.f = open(os.path.join(out, "metrics.csv"), "w", newline="")
            self.w = csv.DictWriter(self.f, fieldnames=["step", "epoch", "loss", "lr"])
            self.w.writeheader()
        elif kind == "tb":
            from torch.utils.tensorboard import SummaryWriter
            self.w = SummaryWriter(log_dir=out)
        elif kind == "wandb":
            import wandb
            self.run = wandb.init(project="bc-sweep", dir=out, config=vars(args))

    def log(self, metrics, step):
        if self.kind == "json":
            self.f.write(json.dumps({"step": step, **metrics}) + "\n"); self.f.flush()
        elif self.kind == "csv":
            self.w.writerow({"step": step, **metrics}); self.f.flush()
        elif self.kind == "tb":
            for k, v in metrics.items():
                self.w.add_scalar(k, v, step)
        elif self.kind == "wandb":
            self.run.log(metrics, step=step)


logger = Logger(args.logger, args.out) if rank == 0 else None
if rank == 0:
    print(f"[rank0] logging to {args.out} with {args.logger}", flush=True)

torch.manual_seed(0)
x = torch.randn(640, 20)
y = (x[:, :5].sum(1) > 0).long()
ds = TensorDataset(x, y)
sampler = DistributedSampler(ds) if distributed else None
dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(dl))
step = 0
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for xb, yb in dl:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        if step % args.log_every == 0:
            print(f"[rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if rank == 0 and step >= args.log_from_step:
                lval = loss.detach() if args.fault == "json_tensor" else loss.item()
                logger.log({"epoch": epoch, "loss": lval, "lr": sched.get_last_lr()[0]}, step)
if distributed:
    dist.barrier()
    dist.destroy_process_group()
print(f"[rank{rank}] done", flush=True)
