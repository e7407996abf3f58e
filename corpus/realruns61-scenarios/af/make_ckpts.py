"""Prepare resume checkpoints for the resume-fault cases."""
import torch, argparse, sys, os
sys.argv = [sys.argv[0]]
import importlib.util
import torch.nn as nn
class LM(nn.Module):
    def __init__(s, vocab, h):
        super().__init__()
        s.emb = nn.Embedding(vocab, h); s.l1 = nn.Linear(h, h); s.aux = nn.Linear(h, 1); s.head = nn.Linear(h, vocab)
d = "/work/rr61/af/work/ckpts"; os.makedirs(d, exist_ok=True)
def mk(h, groups=1):
    m = LM(128, h)
    if groups == 1: o = torch.optim.AdamW(m.parameters(), lr=3e-3)
    else:
        dec = [p for n, p in m.named_parameters() if p.dim() > 1]; nod = [p for n, p in m.named_parameters() if p.dim() <= 1]
        o = torch.optim.AdamW([{"params": dec, "weight_decay": 0.1}, {"params": nod, "weight_decay": 0.0}], lr=3e-3)
    m(torch.zeros(1, dtype=torch.long)) if False else None
    for p in m.parameters(): p.grad = torch.zeros_like(p)
    o.step()
    return {"model": m.state_dict(), "optimizer": o.state_dict(), "step": 400}
torch.save(mk(64), f"{d}/good_step400.pt")
torch.save(mk(96), f"{d}/h96_step400.pt")
torch.save(mk(64, 2), f"{d}/twogroups_step400.pt")
b = open(f"{d}/good_step400.pt", "rb").read()
open(f"{d}/trunc_step400.pt", "wb").write(b[: len(b) // 2])
open(f"{d}/lfs_step400.pt", "w").write("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146e3f1c9b0e8d2a7f6c5b4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6\nsize 245319\n")
print(os.listdir(d))
