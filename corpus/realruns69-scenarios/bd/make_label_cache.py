"""Data-prep step: writes the label cache that elastic_faults.py --fault cache_race reads."""
import json, os, sys, time
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
with open(os.path.join(d, "label_cache.json.tmp"), "w") as f:
    json.dump({str(i): f"class_{i}" for i in range(10)}, f)
os.replace(os.path.join(d, "label_cache.json.tmp"), os.path.join(d, "label_cache.json"))
print(f"prep: wrote {d}/label_cache.json", flush=True)
