"""After healthy-plain has written work/ckpt-good/step00030.pt: make node-b's broken copies.
- work/nodeB/ckpt/step00030.pt : the copy cut short (rsync to node-b interrupted)
- work/ckpt-v1/step00030.pt    : checkpoint of the v1 model config (hidden=96)"""
import os, shutil, torch, torch.nn as nn
os.chdir("/work/rr101/ff/work")
os.makedirs("nodeB/ckpt", exist_ok=True); os.makedirs("ckpt-v1", exist_ok=True)
data = open("ckpt-good/step00030.pt", "rb").read()
open("nodeB/ckpt/step00030.pt", "wb").write(data[: int(len(data) * 0.6)])
m = nn.ModuleDict({"fc1": nn.Linear(32, 96), "fc2": nn.Linear(96, 96), "head": nn.Linear(96, 2)})
torch.save({"model": m.state_dict(), "step": 30}, "ckpt-v1/step00030.pt")
print(len(data), os.path.getsize("nodeB/ckpt/step00030.pt"))
