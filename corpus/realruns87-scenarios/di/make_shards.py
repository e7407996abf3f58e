"""Write per-rank token shards + eval set for ddp_lm.py."""
import sys, os, numpy as np
out, world, nshards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seq, vocab = 32, 64
rng = np.random.default_rng(0)
os.makedirs(out, exist_ok=True)
def seqs(n):
    # simple "language": arithmetic progressions mod vocab, with padding 0 at the end of some
    start = rng.integers(1, vocab, size=(n, 1)); stepv = rng.integers(1, 5, size=(n, 1))
    a = (start + stepv * np.arange(seq + 1)) % (vocab - 1) + 1
    L = rng.integers(seq // 2, seq + 2, size=n)
    for i, l in enumerate(L):
        a[i, l:] = 0
    return a.astype(np.int64)
for r in range(world):
    os.makedirs(f"{out}/rank{r}", exist_ok=True)
    for k in range(nshards):
        np.save(f"{out}/rank{r}/shard{k:03d}.npy", seqs(64))
np.save(f"{out}/eval.npy", seqs(32))
print("wrote", out)
