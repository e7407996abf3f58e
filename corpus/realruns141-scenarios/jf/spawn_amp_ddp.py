"""torch.multiprocessing.spawn + DDP (gloo) + fp16 autocast + GradScaler on CPU, Python logging with timestamps.

--fault collapse : contrastive-style "spread" term with pairwise sqrt distances including the diagonal
                   (zero distance) -> every backward has inf/NaN grads -> scaler skips every step, scale collapses
--fault none     : same run without the spread term (healthy)
"""
import argparse, datetime, logging, math, os, sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="collapse")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--port", default="46882")
p.add_argument("--spread-from", type=int, default=8)
args = p.parse_args()


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 64))
        self.cls = nn.Linear(64, 10)

    def forward(self, x):
        z = self.body(x)
        return self.cls(z), z


def worker(rank, world):
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    log = logging.getLogger("amp")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Enc())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(2048, 32, generator=g)
    y = (x[:, :10].argmax(1))
    if rank == 0:
        log.info("world=%d autocast=float16 scaler=GradScaler(init_scale=%.0f)", world, scaler.get_scale())
    for step in range(1, args.steps + 1):
        xb, yb = x[(step * 32) % 2048:(step * 32) % 2048 + 32], y[(step * 32) % 2048:(step * 32) % 2048 + 32]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16):
            logits, z = model(xb)
            loss = F.cross_entropy(logits.float(), yb)
            if args.fault == "collapse" and step >= args.spread_from:
                zz = F.normalize(z.float(), dim=-1)
                dmat = ((zz[:, None] - zz[None]) ** 2).sum(-1).sqrt()
                loss = loss - 0.05 * dmat.mean()
        s0 = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        s1 = scaler.get_scale()
        if s1 < s0:
            log.warning("Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to %g", s1)
        if rank == 0 and step % 2 == 0:
            log.info("step %d loss %.4f scale %g", step, loss.item(), s1)
    log.info("finished: final loss scale %g", scaler.get_scale())
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs)
