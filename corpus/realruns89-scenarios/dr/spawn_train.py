"""torch.multiprocessing.spawn launcher with stdlib logging; per-rank eval summaries."""
import argparse, logging, math, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

def cosine(step, total=20, base=1e-2):
    return base * 0.5 * (1 + math.cos(math.pi * step / total))

def worker(rank, world, cfg):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)-7s rank{rank} %(message)s", stream=sys.stdout)
    log = logging.getLogger("spawn")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(cfg["port"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr_fn"](0))
    g = torch.Generator().manual_seed(rank)
    losses = []
    for step in range(cfg["steps"]):
        for pg in opt.param_groups: pg["lr"] = cfg["lr_fn"](step)
        x = torch.randn(32, 10, generator=g); y = x.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); losses.append(loss.item())
        log.info("step %d lr %.5f loss %.4f", step, opt.param_groups[0]["lr"], loss.item())
        if step % 5 == 4:
            t = torch.tensor(losses[-5:])
            msg = f"window eval rank{rank}: loss {t.mean():.4f} \u00b1 {t.std():.4f} (\u0394 {t[-1]-t[0]:+.4f})"
            if cfg["summary"] == "log":
                log.info(msg)
            elif cfg["summary"] == "print" and rank == cfg["summary_rank"]:
                print(msg, flush=True)
    dist.barrier()
    log.info("done, final loss %.4f", losses[-1])
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=38790)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--summary", default="none", choices=["none", "log", "print"])
    p.add_argument("--summary-rank", type=int, default=1)
    p.add_argument("--lr", default="cosine", choices=["cosine", "warmup_lambda"])
    a = p.parse_args()
    if a.lr == "cosine":
        lr_fn = cosine
    else:
        lr_fn = lambda s: 1e-2 * min(1.0, (s + 1) / 5)  # linear warmup
    cfg = dict(port=a.port, steps=a.steps, summary=a.summary, summary_rank=a.summary_rank, lr_fn=lr_fn)
    if "LOCAL_RANK" in os.environ:  # started by torchrun: run this rank directly
        cfg["port"] = int(os.environ["MASTER_PORT"])
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), cfg)
    else:
        mp.spawn(worker, args=(a.world, cfg), nprocs=a.world, join=True)
