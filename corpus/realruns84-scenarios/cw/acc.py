"""Small regression loop with accelerate; --fault selects an accelerate misuse on --rank."""
import argparse, os, logging, warnings
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from accelerate import Accelerator
from accelerate.utils import set_seed
from accelerate.logging import get_logger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
a = p.parse_args()
rank = int(os.environ.get("RANK", 0)); me = rank == a.rank
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)

kw = {}
if a.fault == "fp16_cpu" and me:
    kw["mixed_precision"] = "fp16"
if a.fault == "ga_plugin":
    from accelerate.utils import GradientAccumulationPlugin
    kw["gradient_accumulation_plugin"] = GradientAccumulationPlugin(num_steps=2)
    if me: kw["gradient_accumulation_steps"] = 4
acc = Accelerator(**kw)
log = get_logger("train")
set_seed(0)
log.info(f"state: {acc.state}".replace("\n", " | "), main_process_only=True)

X = torch.randn(256, 16); y = X @ torch.randn(16, 1) + 0.1 * torch.randn(256, 1)
dl = DataLoader(TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
model, opt, dl = acc.prepare(model, opt, dl)

if a.fault == "second_acc" and me:
    acc2 = Accelerator(cpu=True, mixed_precision="bf16")

for step, (xb, yb) in enumerate(dl):
    if step >= a.steps: break
    with acc.accumulate(model):
        loss = nn.functional.mse_loss(model(xb), yb)
        acc.backward(loss)
        opt.step(); opt.zero_grad()
    if a.fault == "save_ro" and me and step == a.step:
        acc.save_state("/proc/rr84-not-writable/ckpt")
    log.info(f"step {step} loss {loss.item():.4f}")
acc.wait_for_everyone()
log.info("done", main_process_only=True)
acc.end_training()
