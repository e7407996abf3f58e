"""Another job on the same storage: once a rank reaches a step, hold a lock for a while
(sqlite: BEGIN EXCLUSIVE on the metrics DB; filelock: the node-local cache lock)."""
import argparse, json, time, sqlite3
p = argparse.ArgumentParser()
p.add_argument('--kind', choices=['sqlite', 'filelock'], required=True)
p.add_argument('--target', required=True)
p.add_argument('--progress-dir', required=True)
p.add_argument('--rank', type=int, default=0)
p.add_argument('--at-step', type=int, default=1)
p.add_argument('--hold', type=float, default=40)
p.add_argument('--deadline', type=float, default=150)
a = p.parse_args()
t0 = time.time()
while time.time() - t0 < a.deadline:
    try:
        if json.load(open(f'{a.progress_dir}/rank{a.rank}.json'))['step'] >= a.at_step:
            break
    except Exception:
        pass
    time.sleep(0.1)
if a.kind == 'sqlite':
    con = sqlite3.connect(a.target, timeout=10, isolation_level=None)
    con.execute('CREATE TABLE IF NOT EXISTS metrics (step INTEGER, loss REAL, lr REAL, t REAL)')
    con.execute('BEGIN EXCLUSIVE')
    con.execute('DELETE FROM metrics WHERE step < 0')  # compaction job
    time.sleep(a.hold)
    con.execute('COMMIT')
else:
    from filelock import FileLock
    with FileLock(a.target, timeout=30):
        time.sleep(a.hold)
