"""Lightning Fabric loop launched with torch.multiprocessing.spawn (env set per child), gloo on CPU."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import TensorDataset, DataLoader
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--port", type=int, default=35010)
p.add_argument("--out", default="/tmp/r74bs/fabric")
p.add_argument("--accum", type=int, default=1)
p.add_argument("--precision", default="32-true")

log = logging.getLogger("fabric_train")

def worker(local_rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), LOCAL_RANK=str(local_rank),
                      NODE_RANK="0", WORLD_SIZE=str(args.nproc), RANK=str(local_rank))
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] rank{local_rank} %(name)s: %(message)s")
    fabric = L.Fabric(accelerator="cpu", devices=args.nproc, strategy=L.fabric.strategies.DDPStrategy(
        timeout=timedelta(seconds=60), process_group_backend="gloo"), precision=args.precision)
    fabric.launch()
    rank = fabric.global_rank
    fabric.seed_everything(1234 + rank)
    model = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 5))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    model, opt = fabric.setup(model, opt)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps + 1)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(512, 20, generator=g); Y = (X[:, :5].argmax(1))
    dl = fabric.setup_dataloaders(DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True))
    step = 0
    t0 = time.time()
    while step < args.steps:
        for x, y in dl:
            sched.step()  # warmup schedule, stepped at the top of the iteration
            logits = model(x)
            if args.fault == "nonscalar" and step >= args.step:
                loss = F.cross_entropy(logits, y, reduction="none")  # per-sample weighting experiment
            else:
                loss = F.cross_entropy(logits, y)
            fabric.backward(loss / args.accum)
            if args.fault == "backward_twice" and step == args.step:
                # log gradient norm of the un-scaled loss for the dashboard
                fabric.backward(loss)
            if (step + 1) % args.accum == 0:
                opt.step(); opt.zero_grad()
            if args.fault == "clip_inplace" and rank == args.rank and step >= args.step:
                for prm in model.parameters():
                    prm.clamp_(-0.5, 0.5)
            if step % 5 == 0:
                acc = (logits.argmax(-1) == y).float().mean()
                log.info("step %d loss %.4f acc %.3f (%.1f it/s)", step, loss.mean().item(), acc.item(),
                         (step + 1) / (time.time() - t0))
            if step > 0 and step % 10 == 0:
                if args.fault == "barrier" and rank == args.rank:
                    # rank 1 re-reads its shard index before the checkpoint (slow NFS listing)
                    time.sleep(40)
                dist.monitored_barrier(timeout=timedelta(seconds=15))
                fabric.save(os.path.join(args.out, f"step{step}.ckpt"), {"model": model, "opt": opt, "step": step})
                if rank == 0:
                    log.info("saved checkpoint step%d.ckpt", step)
            step += 1
            if step >= args.steps:
                break
    fabric.barrier()
    if rank == 0:
        log.info("training finished after %d steps", step)

if __name__ == "__main__":
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.nproc, join=True)
