"""Dataset whose sample index lives in a SQLite file on shared storage. Rank 0 (re)builds the
index at start-up if it is stale; the other ranks open it to build their sample list."""
import argparse, os, sqlite3, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--db", required=True)
p.add_argument("--rows", type=int, default=4000)
p.add_argument("--sqlite-timeout", type=float, default=2.0)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

class IndexedDataset(Dataset):
    def __init__(self, db):
        con = sqlite3.connect(db, timeout=args.sqlite_timeout)
        self.rows = con.execute("SELECT id, f0, label FROM samples ORDER BY id").fetchall()
        con.close()
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        sid, f0, label = self.rows[i]
        g = torch.Generator().manual_seed(sid)
        x = torch.randn(16, generator=g); x[0] = f0
        return x, label

def rebuild_index(db, rows, log):
    con = sqlite3.connect(db, timeout=args.sqlite_timeout)
    con.execute("CREATE TABLE IF NOT EXISTS samples (id INTEGER PRIMARY KEY, f0 REAL, label INTEGER)")
    con.commit()
    con.execute("BEGIN EXCLUSIVE")
    con.execute("DELETE FROM samples")
    for i in range(rows):
        con.execute("INSERT INTO samples VALUES (?, ?, ?)", (i, (i % 7) / 7.0, i % 2))
        if i % 500 == 0:
            time.sleep(0.5)   # rows come from scanning shards on the shared filesystem
            log.info("index rebuild: %d/%d rows", i, rows)
    con.commit(); con.close()
    log.info("index rebuild finished")

def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    log = logging.getLogger(f"data.rank{rank}")
    if rank == 0:
        log.info("index %s is stale, rebuilding", args.db)
        rebuild_index(args.db, args.rows, log)
    else:
        time.sleep(1.0)
    ds = IndexedDataset(args.db)
    log.info("%d samples indexed", len(ds))
    sampler = DistributedSampler(ds)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=1)
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0: log.info("step %d loss %.4f", step, loss.item())
        if step >= args.steps: break
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
