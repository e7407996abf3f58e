"""Accelerate training loop with an eval step; --fault main_only_gather puts the metric gather under
`if accelerator.is_main_process:` (a common bug), so only rank 0 enters the collective."""
import argparse, faulthandler
from datetime import timedelta
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--pg-timeout", type=float, default=15)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--watchdog", type=float, default=0)
a = p.parse_args()
if a.watchdog:
    faulthandler.dump_traceback_later(a.watchdog, exit=True)
acc = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=a.pg_timeout))])
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
g = torch.Generator().manual_seed(0)
X = torch.randn(512, 20, generator=g); Y = (X[:, 0] > 0).long()
ds = torch.utils.data.TensorDataset(X, Y)
tl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
vl = torch.utils.data.DataLoader(ds, batch_size=64)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
model, opt, tl, vl = acc.prepare(model, opt, tl, vl)
for ep in range(a.epochs):
    model.train()
    for i, (xb, yb) in enumerate(tl):
        loss = nn.functional.cross_entropy(model(xb), yb)
        acc.backward(loss); opt.step(); opt.zero_grad()
        if i % 4 == 0:
            print(f"[proc {acc.process_index}] epoch {ep} it {i} loss {loss.item():.4f}", flush=True)
    model.eval(); correct = []
    with torch.no_grad():
        for xb, yb in vl:
            correct.append((model(xb).argmax(-1) == yb).float())
    c = torch.cat(correct)
    if a.fault == "main_only_gather":
        if acc.is_main_process:
            allc = acc.gather_for_metrics(c)
            print(f"epoch {ep} val_acc {allc.mean().item():.4f} (n={allc.numel()})", flush=True)
    else:
        allc = acc.gather_for_metrics(c)
        acc.print(f"epoch {ep} val_acc {allc.mean().item():.4f} (n={allc.numel()})")
acc.wait_for_everyone()
acc.print("done")
acc.end_training()
