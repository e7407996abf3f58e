"""Classifier trainer with a typer CLI, launched with mp.spawn (or single process)."""
import logging, os, sys, time
from datetime import timedelta
from typing import Optional

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import typer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm

app = typer.Typer(add_completion=False)


class RankFilter(logging.Filter):
    def __init__(self, rank):
        super().__init__(); self.rank = rank

    def filter(self, record):
        record.rank = self.rank
        return True


def setup_logging(rank, log_file):
    h = [logging.StreamHandler(sys.stdout)]
    if log_file and rank == 0:
        h.append(logging.FileHandler(log_file))
    for x in h:
        x.addFilter(RankFilter(rank))
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING, handlers=h, force=True,
                        format="%(asctime)s | rank %(rank)s | %(levelname)-7s | %(name)s | %(message)s")
    return logging.getLogger("cls")


def make_data(n=2048, d=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 4, generator=g)
    return TensorDataset(x, (x @ w).argmax(1))


def worker(rank, world, opts):
    log = setup_logging(rank, opts["log_file"])
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    ds = make_data()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    loader = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None, num_workers=opts["num_workers"])
    net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4), )
    model = DDP(net, find_unused_parameters=opts["find_unused"]) if distributed else net
    opt = torch.optim.SGD(model.parameters(), lr=opts["lr"], momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    start_epoch = 0
    if opts["resume"]:
        ck = torch.load(opts["resume"], map_location="cpu")
        (model.module if distributed else model).load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"]); start_epoch = ck["epoch"] + 1
        log.info("resumed from %s (epoch %d)", opts["resume"], ck["epoch"])
    writer = None
    if rank == 0 and opts["tb_dir"]:
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(opts["tb_dir"])
    log.info("world=%d epochs=%d lr=%g", world, opts["epochs"], opts["lr"])
    if opts["sched_first"]:
        sched.step()
    step = 0
    for epoch in range(start_epoch, opts["epochs"]):
        if sampler is not None:
            sampler.set_epoch(epoch)
        bar = tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0, mininterval=0.5, file=sys.stderr)
        for x, y in bar:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if writer:
                writer.add_scalar("train/loss", loss.item(), step)
        sched.step()
        with torch.no_grad():
            acc = ((model(ds.tensors[0][:256]).argmax(1) == ds.tensors[1][:256]).float().mean())
        if distributed:
            dist.all_reduce(acc); acc /= world
        metrics = {"loss": loss.item(), "acc": acc.item()}
        if rank == 0:
            log.info("epoch %d | loss %.4f | %s %.4f | lr %.4f", epoch, metrics["loss"], opts["select_metric"], metrics[opts["select_metric"]], sched.get_last_lr()[0])
            os.makedirs(opts["out_dir"], exist_ok=True)
            torch.save({"model": (model.module if distributed else model).state_dict(), "opt": opt.state_dict(), "epoch": epoch},
                       os.path.join(opts["out_dir"], "last.pt"))
        if distributed:
            dist.barrier()
    log.info("training finished")
    if distributed:
        dist.destroy_process_group()


@app.command()
def train(world_size: int = typer.Option(1, help="number of processes (mp.spawn)"),
          epochs: int = 3, lr: float = 0.05, num_workers: int = 0,
          resume: Optional[str] = None, out_dir: str = "/work/rr72/bk/runs/cls",
          tb_dir: Optional[str] = None, log_file: Optional[str] = None,
          select_metric: str = "acc", find_unused: bool = False, sched_first: bool = False,
          port: int = 32400):
    opts = dict(epochs=epochs, lr=lr, num_workers=num_workers, resume=resume, out_dir=out_dir, tb_dir=tb_dir,
                log_file=log_file, select_metric=select_metric, find_unused=find_unused, sched_first=sched_first)
    if world_size > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        mp.spawn(worker, args=(world_size, opts), nprocs=world_size, join=True)
    else:
        worker(0, 1, opts)


if __name__ == "__main__":
    app()
