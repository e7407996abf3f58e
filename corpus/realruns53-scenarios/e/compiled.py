"""Healthy torch.compile training with variable sequence lengths / graph breaks (TORCH_LOGS noise)."""
import argparse, os, torch, torch.nn as nn
from tqdm import tqdm
p = argparse.ArgumentParser()
p.add_argument("--mode", default="recompiles"); p.add_argument("--steps", type=int, default=12)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0))
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(50, 32); s.l = nn.Linear(32, 50)
    def forward(s, x):
        h = s.emb(x).mean(1)
        if args.mode == "graph_breaks":
            print(f"debug: hidden norm {h.norm().item():.3f}")  # .item()+print -> graph break
        return s.l(h)
m = M(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
cm = torch.compile(m, backend="aot_eager", dynamic=False)
g = torch.Generator().manual_seed(rank)
for step in tqdm(range(args.steps), desc=f"rank{rank} train", mininterval=0):
    L = [8, 12, 16, 20, 24, 28, 8, 12][step % 8]
    x = torch.randint(0, 50, (4, L), generator=g); y = torch.randint(0, 50, (4,), generator=g)
    loss = nn.functional.cross_entropy(cm(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 4 == 0: tqdm.write(f"step {step} seq_len {L} loss {loss.item():.4f}")
print(f"rank {rank}: done, final loss {loss.item():.4f}")
