"""CPU bf16 autocast training of a small contrastive/classifier model."""
import argparse, logging, warnings
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "proto_outside_autocast"])
p.add_argument("--legacy-amp", action="store_true", help="use torch.cuda.amp.* helpers copied from the GPU script")
p.add_argument("--steps", type=int, default=8)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(message)s")
log = logging.getLogger(__name__)

enc = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 64))
prototypes = nn.Parameter(torch.randn(10, 64))   # class prototypes kept in fp32
opt = torch.optim.SGD(list(enc.parameters()) + [prototypes], lr=0.05, momentum=0.9)
if a.legacy_amp:
    scaler = torch.cuda.amp.GradScaler()
    ac = lambda: torch.cuda.amp.autocast(dtype=torch.bfloat16)
else:
    scaler = None
    ac = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
g = torch.Generator().manual_seed(0)
for step in range(a.steps):
    x = torch.randn(64, 32, generator=g); y = torch.randint(0, 10, (64,), generator=g)
    with ac():
        z = F.normalize(enc(x), dim=-1)
        if a.fault == "none":
            logits = z @ F.normalize(prototypes, dim=-1).t() / 0.1
    if a.fault == "proto_outside_autocast":
        # prototype scoring moved into a helper that runs after the autocast block
        logits = torch.mm(z, F.normalize(prototypes, dim=-1).t()) / 0.1
    loss = F.cross_entropy(logits.float(), y)
    if scaler is not None:
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    else:
        loss.backward(); opt.step()
    opt.zero_grad()
    log.info("step %d loss %.4f z.dtype=%s", step, loss.item(), z.dtype)
log.info("finished %d steps", a.steps)
