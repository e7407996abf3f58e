"""accelerate Accelerator loop with save_state/load_state.
Flags: --out DIR, --resume DIR|none, --steps, --save-every, --freeze-emb (trainable set differs -> optimizer groups differ),
       --hidden."""
import argparse, os
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging

p = argparse.ArgumentParser()
p.add_argument("--out", default="acc/run")
p.add_argument("--resume", default="none")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--two-groups", action="store_true")
p.add_argument("--hidden", type=int, default=128)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
acc = Accelerator(cpu=True)
log = get_logger("acc_state")
model = nn.Sequential(nn.Linear(32, args.hidden), nn.GELU(), nn.Linear(args.hidden, 4))
if args.two_groups:
    opt = torch.optim.Adam([{"params": model[0].parameters(), "lr": 1e-3},
                            {"params": model[2].parameters(), "lr": 1e-4}])
else:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(0)
x = torch.randn(1024, 32, generator=g)
y = (x.sum(1) > 0).long()
dl = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
if args.resume != "none":
    log.info(f"Resuming from {args.resume}", main_process_only=False)
    acc.load_state(args.resume)
step = 0
for xb, yb in dl:
    loss = nn.functional.cross_entropy(model(xb), yb)
    acc.backward(loss)
    opt.step(); opt.zero_grad()
    step += 1
    if step % 5 == 0:
        log.info(f"step {step} loss {loss.item():.4f}")
    if step % args.save_every == 0:
        acc.save_state(os.path.join(args.out, f"checkpoint_{step}"))
    if step >= args.steps:
        break
acc.wait_for_everyone()
log.info("finished")
