"""Tiny transformer-ish block trained with torch.compile on CPU."""
import argparse, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=5)
p.add_argument("--fullgraph", action="store_true")
args = p.parse_args()

class Block(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.ln = nn.LayerNorm(d); self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Linear(d, 10)
    def forward(self, x):
        h = x + self.ff(self.ln(x))
        if args.fault == "datadep":
            # skip the residual when activations blow up ("stability trick")
            if h.abs().max() > 10:
                h = self.ln(h)
        return self.out(h.mean(1))

def main():
    torch.manual_seed(0)
    model = Block()
    cmodel = torch.compile(model, fullgraph=args.fullgraph)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(args.steps):
        x = torch.randn(8, 12, 32); y = torch.randint(0, 10, (8,))
        t = time.time()
        loss = F.cross_entropy(cmodel(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"step {step} loss {loss.item():.4f} ({time.time()-t:.2f}s)", flush=True)
    print("done")

if __name__ == "__main__":
    main()
