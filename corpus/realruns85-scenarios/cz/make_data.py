"""Builds the local synthetic shards and checkpoints the scenarios read."""
import os, torch, torch.nn as nn
R = "/work/rr85/cz/data"
def shard(n=400, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, :4].argmax(1))
    return {"x": x, "y": y}
for name in ["shards", "shards_2", "shards_dim", "shards_nan"]:
    os.makedirs(f"{R}/{name}", exist_ok=True)
for r in range(4):
    torch.save(shard(seed=r), f"{R}/shards/shard-{r:05d}.pt")
    torch.save(shard(seed=r), f"{R}/shards_dim/shard-{r:05d}.pt" )
    s = shard(seed=r)
    if r == 1:
        s["x"][7 * 16 + 3, 5] = float("inf")   # bad record from the export job
    torch.save(s, f"{R}/shards_nan/shard-{r:05d}.pt")
for r in range(2):
    torch.save(shard(seed=r), f"{R}/shards_2/shard-{r:05d}.pt")
# rank 1's shard was re-exported with the v2 feature set (20 columns)
torch.save(shard(seed=1, d=20), f"{R}/shards_dim/shard-00001.pt")
# checkpoint from the hidden=64 run
import sys; sys.argv=["x"]
class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_cls=4):
        super().__init__(); self.fc1 = nn.Linear(d_in, hidden); self.fc2 = nn.Linear(hidden, n_cls)
os.makedirs(f"{R}/ckpt", exist_ok=True)
torch.save({"model": MLP(hidden=64).state_dict(), "step": 500}, f"{R}/ckpt/mlp-h64-step500.pt")
