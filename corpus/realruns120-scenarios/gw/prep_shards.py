import os, sys, numpy as np
root = sys.argv[1]; world = int(sys.argv[2]); n = int(sys.argv[3])
for r in range(world):
    d = os.path.join(root, f"shard{r}"); os.makedirs(d, exist_ok=True)
    g = np.random.RandomState(r); lab = []
    for i in range(n):
        x = g.randn(g.randint(56, 72), 16).astype(np.float32)
        f = f"utt_{r}_{i:05d}.npy"; np.save(os.path.join(d, f), x)
        lab.append(f"{f} {int(x[:, :4].sum() > 0) + 2 * int(x[:, 4:8].sum() > 0)}")
    open(os.path.join(d, "labels.txt"), "w").write("\n".join(lab) + "\n")
print("wrote", world, "shards of", n)
