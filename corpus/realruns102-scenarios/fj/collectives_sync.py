"""Data-parallel trainer with hand-written gradient averaging and metric syncing (no DDP wrapper).

Every rank trains on its own shard; gradients are averaged with dist.all_reduce per parameter,
per-class statistics / predictions are synced with all_reduce / all_gather / broadcast.
--fault picks the bug that bites on --fault-rank.
"""
import argparse, json, logging, os, sys, time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data/clean2")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--bs", type=int, default=64)
p.add_argument("--sync-every", type=int, default=10)
p.add_argument("--fault", default="none", choices=["none", "bincount", "gather-dtype", "skip-empty", "broadcast-vocab"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--pg-timeout", type=int, default=20)
args = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s %(levelname)-7s rank{rank} | %(message)s")
log = logging.getLogger(__name__)


def load_shard():
    xs, ys = [], []
    with open(os.path.join(args.data_dir, f"shard-{rank:05d}.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            xs.append(r["x"]); ys.append(r["y"])
    x = torch.tensor(xs, dtype=torch.float32); y = torch.tensor(ys)
    if args.fault == "bincount" and rank == args.fault_rank:
        keep = y != 3  # this rank's shard was filtered by the "drop low-quality rows" pass
        x, y = x[keep], y[keep]
    return x, y


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    log.info("world_size=%d backend=%s", world, dist.get_backend())
    x, y = load_shard()
    log.info("shard: %d rows, label histogram %s", len(y), torch.bincount(y).tolist())
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    for prm in model.parameters():
        dist.broadcast(prm.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    if args.fault == "broadcast-vocab":
        # label names: rank 0 reads them from the shard metadata and broadcasts the id table
        if rank == 0:
            table = torch.arange(4, dtype=torch.int64)
        else:
            table = torch.empty(4 if rank != args.fault_rank else 3, dtype=torch.int64)  # stale config: 3 labels
        log.info("syncing label table (%d entries)", table.numel())
        dist.broadcast(table, src=0)
        log.info("label table %s", table.tolist())

    n = len(y)
    for step in range(1, args.steps + 1):
        lo = ((step - 1) * args.bs) % n
        xb, yb = x[lo:lo + args.bs], y[lo:lo + args.bs]
        if args.fault == "skip-empty" and rank == args.fault_rank and step == 7:
            xb, yb = xb[:0], yb[:0]  # last partial batch of the shard filter came back empty
        if len(yb) == 0:
            log.warning("empty batch at step %d, skipping", step)
            continue
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        for prm in model.parameters():
            dist.all_reduce(prm.grad)
            prm.grad /= world
        opt.step()
        lt = loss.detach().clone()
        dist.all_reduce(lt)
        if rank == 0:
            log.info("step %d/%d  loss %.4f", step, args.steps, lt.item() / world)

        if step % args.sync_every == 0:
            with torch.no_grad():
                pred = model(x).argmax(-1)
            correct = torch.bincount(y[pred == y])
            total = torch.bincount(y)
            if args.fault != "bincount":
                correct = torch.bincount(y[pred == y], minlength=4)
                total = torch.bincount(y, minlength=4)
            dist.all_reduce(correct); dist.all_reduce(total)
            log.info("per-class acc %s", [round(c / max(t, 1), 3) for c, t in zip(correct.tolist(), total.tolist())])
            conf = torch.softmax(model(x[:128]), -1).max(-1).values.detach()
            if args.fault == "gather-dtype" and rank == args.fault_rank:
                conf = torch.from_numpy(np.asarray(conf.numpy(), dtype=np.float64))  # calibrated via numpy
            out = [torch.zeros_like(conf) for _ in range(world)]
            dist.all_gather(out, conf)
            if rank == 0:
                log.info("mean confidence %.4f", torch.cat(out).float().mean().item())
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
