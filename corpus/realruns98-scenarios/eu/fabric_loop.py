"""Lightning Fabric training loop, launched with torch.multiprocessing.spawn (or single process).

Python logging with timestamps.  --fault selects:
  none         healthy (num_workers=4 on a 2-core box, scheduler stepped first -> warnings)
  gather_pred  eval all_gathers per-batch predictions of a manually sharded, uneven val set
  save_rank0   fabric.save() called only on rank 0
  eval_nograd  validation helper leaves grad disabled; next train step's backward fails
"""
import argparse
import logging
import os
import sys
from datetime import timedelta

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--port", type=int, default=41630)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()


def setup_logging(rank):
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
        stream=sys.stdout, force=True,
    )
    return logging.getLogger("train")


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    y = (x[:, :3].sum(1) > 0).long()
    return x, y


def worker(local_rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(local_rank),
                      LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world), NODE_RANK="0")
    log = setup_logging(local_rank)
    from lightning.fabric.strategies import DDPStrategy
    strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=20)) if world > 1 else "auto"
    fabric = L.Fabric(accelerator="cpu", devices=world, strategy=strategy)
    fabric.launch()
    fabric.seed_everything(1234)
    rank = fabric.global_rank

    x, y = make_data(1024, 0)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=args.workers)
    vx, vy = make_data(203, 1)
    if args.fault == "gather_pred":
        # manual sharding of the eval set: rank r takes every world-th sample
        vx, vy = vx[rank::world], vy[rank::world]
        val_loader = DataLoader(TensorDataset(vx, vy), batch_size=25)
        val_loader = fabric.setup_dataloaders(val_loader, use_distributed_sampler=False)
    else:
        val_loader = fabric.setup_dataloaders(DataLoader(TensorDataset(vx, vy), batch_size=25))
    train_loader = fabric.setup_dataloaders(train_loader)

    model = nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(train_loader))
    model, opt = fabric.setup(model, opt)
    if args.fault in ("none", "save_rank0"):
        sched.step()  # warm-start the schedule (before the first optimizer.step)

    def evaluate():
        model.eval()
        torch.set_grad_enabled(False)
        correct, total, preds = 0, 0, []
        for bx, by in val_loader:
            out = model(bx).argmax(1)
            if args.fault == "gather_pred":
                preds.append(fabric.all_gather(out))
            correct += (out == by).sum()
            total += len(by)
        correct = fabric.all_reduce(correct.float(), reduce_op="sum")
        total = fabric.all_reduce(torch.tensor(float(total)), reduce_op="sum")
        if args.fault != "eval_nograd":
            torch.set_grad_enabled(True)
        model.train()
        return (correct / total).item()

    step = 0
    for epoch in range(args.epochs):
        for bx, by in train_loader:
            loss = F.cross_entropy(model(bx), by)
            opt.zero_grad()
            fabric.backward(loss)
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0:
                log.info("epoch %d step %d loss %.4f lr %.2e", epoch, step, loss.item(), sched.get_last_lr()[0])
        acc = evaluate()
        log.info("epoch %d done: val_acc %.4f", epoch, acc)
    if args.fault == "save_rank0":
        # "only the main process should write the checkpoint"
        if rank == 0:
            fabric.save("/tmp/eu_runs/fabric_final.ckpt", {"model": model, "step": step})
            log.info("saved final checkpoint, %d steps", step)
    else:
        fabric.save("/tmp/eu_runs/fabric_final.ckpt", {"model": model, "step": step})
        log.info("saved final checkpoint, %d steps", step)


if __name__ == "__main__":
    if args.nprocs > 1:
        mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs, join=True)
    else:
        worker(0, 1)
