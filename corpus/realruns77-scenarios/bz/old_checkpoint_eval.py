"""Evaluate / fine-tune from a checkpoint produced by an older training script
(torch.save(model) of the whole module, as many 2019-era repos did)."""
import argparse, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--ckpt", required=True)
p.add_argument("--mode", default="default", choices=["default", "trusted", "state_dict"])
p.add_argument("--steps", type=int, default=5)
args = p.parse_args()

print(f"torch {torch.__version__}; loading {args.ckpt} (mode={args.mode})", flush=True)
if args.mode == "default":
    model = torch.load(args.ckpt, map_location="cpu")            # worked on torch 1.x
elif args.mode == "trusted":
    model = torch.load(args.ckpt, map_location="cpu", weights_only=False)
else:
    sd = torch.load(args.ckpt, map_location="cpu")
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
    model.load_state_dict(sd["state_dict"])
model.train()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1, args.steps + 1):
    x = torch.randn(32, 16); y = (x.sum(1) > 0).long()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"finetune step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.1)
print("done")
