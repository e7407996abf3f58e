"""Script family: retrieval evaluation after training an embedding model; computes the full
query x corpus similarity matrix in one go. --n controls corpus size."""
import argparse, time
import torch, torch.nn as nn, torch.nn.functional as F
ap = argparse.ArgumentParser(); ap.add_argument("--n", type=int, default=2000); ap.add_argument("--steps", type=int, default=60)
a = ap.parse_args()
torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64))
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
for step in range(a.steps):
    x = torch.randn(128, 32); xp = x + 0.05 * torch.randn_like(x)
    z1, z2 = F.normalize(enc(x), dim=-1), F.normalize(enc(xp), dim=-1)
    loss = F.cross_entropy(z1 @ z2.T / 0.07, torch.arange(128))
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} contrastive loss {loss.item():.4f}")
print("encoding corpus of", a.n, "items")
with torch.no_grad():
    corpus = torch.randn(a.n, 32)
    emb = F.normalize(enc(corpus), dim=-1)
    queries = emb + 0.01 * torch.randn_like(emb)
    sims = queries @ emb.T                                  # n x n similarity matrix
    recall1 = (sims.argmax(-1) == torch.arange(a.n)).float().mean()
print(f"recall@1 = {recall1:.4f}")
