"""accelerate loop. --mode healthy | resume_pickled"""
import argparse, os, warnings, argparse as ap
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging
p = ap.ArgumentParser(); p.add_argument("--mode", default="healthy"); p.add_argument("--steps", type=int, default=12)
p.add_argument("--ckpt", default="acc_ckpt.pt"); a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
acc = Accelerator(gradient_accumulation_steps=2)
log = get_logger("acc_train")
log.info(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}", main_process_only=False)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
ds = torch.utils.data.TensorDataset(torch.randn(200, 16), torch.randint(0, 4, (200,)))
dl = torch.utils.data.DataLoader(ds, batch_size=10, shuffle=True)
if a.mode == "resume_pickled":
    state = torch.load(a.ckpt)  # checkpoint written by an older script that pickled the args Namespace
    model.load_state_dict(state["model"])
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for x, y in dl:
    with acc.accumulate(model):
        loss = nn.functional.cross_entropy(model(x), y)
        acc.backward(loss)
        if acc.sync_gradients:
            gn = acc.clip_grad_norm_(model.parameters(), 0.01)
            if gn > 0.1:
                log.warning(f"grad norm {gn:.2f} clipped to 0.01", main_process_only=False)
        opt.step(); opt.zero_grad()
    step += 1
    if step % 4 == 0:
        log.info(f"step {step} loss {acc.gather(loss.detach()).mean().item():.4f}")
    if step >= a.steps:
        break
acc.wait_for_everyone()
if acc.is_main_process:
    torch.save({"model": acc.unwrap_model(model).state_dict(), "args": a}, a.ckpt)
    log.info(f"saved {a.ckpt}")
acc.end_training()
