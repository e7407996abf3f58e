"""Build small local token-file datasets (variants used by the scenarios)."""
import json, os, shutil, sys
import numpy as np
R = "/work/rr88/dk/data"
rng = np.random.default_rng(0)
def shard(d, n=96, ragged=False, tags=("web", "books", "code")):
    os.makedirs(d, exist_ok=True)
    lab = {}
    for i in range(n):
        L = int(rng.integers(33, 61)) if ragged else 33
        a = rng.integers(0, 500, size=L).astype(np.int32)
        nm = f"sample_{i:05d}.npy"
        np.save(os.path.join(d, nm), a)
        lab[nm] = tags[i % len(tags)]
    json.dump(lab, open(os.path.join(d, "labels.json"), "w"))
    return lab
base = f"{R}/tok"
if os.path.exists(R): shutil.rmtree(R)
for r in range(4):
    shard(f"{base}/shard{r}")
# rank-1 shard re-exported with a newer labeller that knows a 4th source type
shutil.copytree(base, f"{R}/tok_newtag")
shard(f"{R}/tok_newtag/shard1", tags=("web", "books", "code", "web", "forum"))
# rank-1 shard produced by a different pipeline without fixed-length packing
shutil.copytree(base, f"{R}/tok_ragged")
shard(f"{R}/tok_ragged/shard1", ragged=True)
# shard 0 sample 41 truncated by an interrupted rsync
shutil.copytree(base, f"{R}/tok_trunc")
p = f"{R}/tok_trunc/shard0/sample_00041.npy"
b = open(p, "rb").read(); open(p, "wb").write(b[:150])
# rank-1 shard directory never synced (exists, but empty)
shutil.copytree(base, f"{R}/tok_nosync")
shutil.rmtree(f"{R}/tok_nosync/shard1"); os.makedirs(f"{R}/tok_nosync/shard1")
print("ok")
# text corpus for stream_ddp.py: parts of different sizes
for name, sizes in (("stream", (200, 120, 200, 150)), ("stream_dirty", (160, 160, 160, 160))):
    d = f"{R}/{name}"; os.makedirs(d, exist_ok=True)
    for k, n in enumerate(sizes):
        with open(f"{d}/part-{k:05d}.txt", "w") as fh:
            for i in range(n):
                L = int(rng.integers(10, 30))
                line = " ".join(str(int(t)) for t in rng.integers(1, 300, size=L))
                if name == "stream_dirty" and (k, i) in ((0, 17), (1, 90), (2, 3), (3, 141)):
                    line = line[:20] + " \\N " + line[20:]  # NULL marker from a SQL export
                fh.write(line + "\n")
# rank-1 shard whose sample 50 sits on a path nobody ever writes (stand-in for a stalled network mount)
shutil.copytree(base, f"{R}/tok_fifo")
os.remove(f"{R}/tok_fifo/shard1/sample_00050.npy"); os.mkfifo(f"{R}/tok_fifo/shard1/sample_00050.npy")
# single-machine debug copy: shard0 is the unpacked (variable-length) export
shutil.copytree(base, f"{R}/tok_ragged0")
shard(f"{R}/tok_ragged0/shard0", ragged=True)
