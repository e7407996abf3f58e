"""Ranks build per-shard indices, then rank 0 merges them after every rank has published
'index/<rank>' in a TCPStore.  --data-glob selects the shard files."""
import argparse, glob, json, logging, os, sys, time
from datetime import timedelta
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--data-glob", default="data/shard-*.jsonl")
p.add_argument("--store-port", type=int, default=46470)
p.add_argument("--wait-timeout", type=int, default=20)
args = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s")
log = logging.getLogger(__name__)


def main():
    store = dist.TCPStore(os.environ["MASTER_ADDR"], args.store_port, world, rank == 0,
                          timeout=timedelta(seconds=args.wait_timeout))
    files = sorted(glob.glob(args.data_glob))
    mine = files[rank::world]
    log.info("found %d shard files, %d assigned to this rank", len(files), len(mine))
    if not mine:
        log.info("no shards for this rank, nothing to index")
        return
    index = {}
    for f in mine:
        with open(f) as fh:
            for ln, line in enumerate(fh):
                rec = json.loads(line)
                index[rec["id"]] = (f, ln)
        log.info("indexed %s", f)
    store.set(f"index/{rank}", json.dumps(index))
    if rank == 0:
        log.info("waiting for the %d other ranks to publish their index", world - 1)
        store.wait([f"index/{r}" for r in range(world)])
        merged = {}
        for r in range(world):
            merged.update(json.loads(store.get(f"index/{r}")))
        log.info("merged index: %d records", len(merged))
        store.set("merged", "1")
    else:
        store.wait(["merged"])
    log.info("done")


if __name__ == "__main__":
    main()
