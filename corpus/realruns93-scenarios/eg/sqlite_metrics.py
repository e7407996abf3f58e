#!/usr/bin/env python
"""DDP training that records metrics from every rank into one shared SQLite file.
Rank 0 periodically compacts the database in a background thread."""
import argparse, datetime, logging, os, sqlite3, sys, threading, time
import torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--db", default="/work/rr93/eg/tmp/metrics.db"); p.add_argument("--steps", type=int, default=3000)
p.add_argument("--compact-every", type=int, default=1500); p.add_argument("--busy-timeout", type=float, default=1.0)
a = p.parse_args()
rank = int(os.environ["RANK"])
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
log = logging.getLogger()
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
if rank == 0:
    c = sqlite3.connect(a.db); c.execute("CREATE TABLE IF NOT EXISTS m (rank INT, step INT, loss REAL, t REAL)"); c.commit(); c.close()
dist.barrier()
db = sqlite3.connect(a.db, timeout=a.busy_timeout, check_same_thread=False)

def compact(step):
    con = sqlite3.connect(a.db, timeout=a.busy_timeout)
    log.info("metrics compaction started (step %d)", step)
    con.execute("BEGIN EXCLUSIVE")
    rows = con.execute("SELECT rank, step/100, avg(loss) FROM m GROUP BY rank, step/100").fetchall()
    con.execute("CREATE TABLE IF NOT EXISTS m_hourly (rank INT, bucket INT, loss REAL)")
    con.executemany("INSERT INTO m_hourly VALUES (?,?,?)", rows)
    time.sleep(4.0)  # large table: rewrite takes a while
    con.commit(); con.close()
    log.info("metrics compaction finished")

torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for step in range(a.steps):
    x = torch.randn(16, 16); y = (x[:, :2].sum(1) > 0).long() + 2 * (x[:, 2] > 0).long()
    loss = F.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    log.info("step %d loss %.4f", step, loss.item())
    if step % 5 == 0:
        db.execute("INSERT INTO m VALUES (?,?,?,?)", (rank, step, loss.item(), time.time())); db.commit()
    if rank == 0 and step and step % a.compact_every == 0:
        threading.Thread(target=compact, args=(step,), daemon=True).start()
log.info("done")
dist.barrier(); dist.destroy_process_group()
