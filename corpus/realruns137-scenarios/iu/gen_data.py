"""Builds the small on-disk datasets the scenarios read."""
import os, sys, shutil, numpy as np
root = "/work/rr137/iu/data"
def make(name, n_shards=4, per=40, feat=32, seed=0):
    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    rng = np.random.default_rng(seed)
    for s in range(n_shards):
        os.makedirs(os.path.join(d, f"shard_{s:02d}"))
        for i in range(per):
            x = rng.normal(size=feat).astype(np.float32)
            y = float(int(abs(x[:4].sum() * 2)) % 4)
            np.save(os.path.join(d, f"shard_{s:02d}", f"sample_{i:04d}.npy"), np.append(x, y).astype(np.float32))
    return d
make("feat")
d = make("feat_ragged")   # a re-exported sample with more features
np.save(f"{d}/shard_02/sample_0017.npy", np.random.default_rng(1).normal(size=41).astype(np.float32))
d = make("feat_corrupt")  # a sample cut short by an interrupted copy
p = f"{d}/shard_03/sample_0021.npy"; b = open(p, "rb").read(); open(p, "wb").write(b[:150])
d = make("feat_badlabel")  # a sample with label 5 from a newer annotation pass
a = np.load(f"{d}/shard_01/sample_0009.npy"); a[-1] = 5.0; np.save(f"{d}/shard_01/sample_0009.npy", a)
d = make("feat_dangling")  # a shard member that is a symlink to a deleted file
os.remove(f"{d}/shard_02/sample_0030.npy"); os.symlink("/work/rr137/iu/data/staging/sample_0030.npy", f"{d}/shard_02/sample_0030.npy")
d = make("feat_perm")
os.chmod(f"{d}/shard_01/sample_0012.npy", 0o000)
d = make("feat_fifo")
os.remove(f"{d}/shard_00/sample_0005.npy"); os.mkfifo(f"{d}/shard_00/sample_0005.npy")
make("feat_uneven", n_shards=3, per=27)
d = make("feat_missing_shard", n_shards=3, per=40)  # rank 3's shard never synced
make("big", n_shards=2, per=32, feat=262144)
