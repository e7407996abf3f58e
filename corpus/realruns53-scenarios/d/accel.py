import argparse, os, warnings, math
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--accum", type=int, default=4)
p.add_argument("--steps", type=int, default=40)
a = p.parse_args()

kw = {}
if a.fault == "fp16-cpu":
    kw["mixed_precision"] = "fp16"
acc = Accelerator(gradient_accumulation_steps=a.accum, **kw)
set_seed(0)
x = torch.randn(400, 20); y = (x[:, :3].sum(1) > 0).long()
dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=a.steps)
if a.fault == "none":
    # stepping the scheduler before the optimizer (common copy-paste) -> warning only
    sched.step()
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
acc.print(f"num_processes={acc.num_processes} mixed_precision={acc.mixed_precision} accum={a.accum}")
bar = tqdm(total=a.steps - 1, disable=not acc.is_local_main_process, desc="train")
step = 0
for epoch in range(100):
    for xb, yb in dl:
        with acc.accumulate(model):
            loss = nn.functional.cross_entropy(model(xb), yb)
            acc.backward(loss)
            opt.step(); sched.step(); opt.zero_grad()
        if acc.sync_gradients:
            step += 1; bar.update(1)
            if step % 10 == 0:
                l = acc.gather(loss.detach()).mean().item()
                acc.print(f"step {step} loss {l:.4f} lr {sched.get_last_lr()[0]:.4f}")
        if step >= a.steps - 1:
            break
    if step >= a.steps - 1:
        break
bar.close()
acc.wait_for_everyone()
acc.print("training complete")
