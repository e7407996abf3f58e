"""Quick prep script written on macOS (spawn default) and run here with spawn forced: no __main__ guard."""
import multiprocessing as mp, os, sys
mp.set_start_method("spawn", force=True)
def count(path):
    with open(path) as f: return sum(1 for _ in f)
shards = sorted(os.path.join("/work/rr59/x/work/corpus", f) for f in os.listdir("/work/rr59/x/work/corpus"))
print(f"counting {len(shards)} shards", flush=True)
pool = mp.Pool(2)
print("total lines:", sum(pool.map(count, shards)), flush=True)
pool.close(); pool.join()
