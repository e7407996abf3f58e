"""Single-process export of a DCP (sharded) checkpoint into a plain torch.save file, then fine-tune the exported model."""
import argparse, sys, os, warnings, logging
import torch, torch.nn as nn
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

p = argparse.ArgumentParser()
p.add_argument("--dcp", required=True)
p.add_argument("--out", default="work/export/model.pt")
p.add_argument("--strip-prefix", action="store_true")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=3)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("export")

class Net(nn.Module):
    def __init__(s, d, L):
        super().__init__()
        s.inp = nn.Linear(16, d)
        s.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU()) for _ in range(L)])
        s.out = nn.Linear(d, 1)
    def forward(s, x):
        h = s.inp(x)
        for b in s.blocks: h = h + b(h)
        return s.out(h).squeeze(-1)

os.makedirs(os.path.dirname(a.out), exist_ok=True)
log.info("converting %s -> %s", a.dcp, a.out)
dcp_to_torch_save(a.dcp, a.out)
full = torch.load(a.out, map_location="cpu", weights_only=True)
log.info("top-level keys: %s, step=%s", list(full.keys()), full.get("step"))
sd = full["model"]
if a.strip_prefix:
    sd = {k.removeprefix("model."): v for k, v in sd.items()}
model = Net(a.hidden, a.layers)
model.load_state_dict(sd)
log.info("loaded %d tensors", len(sd))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
x = torch.randn(128, 16); y = x[:, :4].sum(-1)
for step in range(5):
    loss = nn.functional.mse_loss(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
    log.info("finetune step %d mse %.4f", step, loss.item())
torch.save(model.state_dict(), a.out.replace(".pt", "_ft.pt"))
log.info("done")
