"""accelerate: periodic save_state / resume with load_state for a tiny GPT-2.
--mode save | resume ; --resume-dir DIR ; --model-layers N (changed model on resume)"""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
import logging
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--out", default="/work/rr90/du/accel/run")
p.add_argument("--resume-dir", default="")
p.add_argument("--layers", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--save-every", type=int, default=5)
a = p.parse_args()
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger(__name__)
acc = Accelerator(project_dir=a.out)
set_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=a.layers, n_embd=64, n_head=4, vocab_size=512, n_positions=64))
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=a.steps)
model, opt, sched = acc.prepare(model, opt, sched)
start = 0
if a.resume_dir:
    log.info(f"resuming from {a.resume_dir}", main_process_only=False)
    acc.load_state(a.resume_dir)
    start = int(a.resume_dir.rstrip("/").split("_")[-1])
g = torch.Generator().manual_seed(acc.process_index)
for step in range(start, a.steps):
    ids = torch.randint(0, 512, (8, 32), generator=g)
    loss = model(input_ids=ids, labels=ids).loss
    acc.backward(loss)
    opt.step(); sched.step(); opt.zero_grad()
    log.info(f"step {step} loss {loss.item():.4f}", main_process_only=False)
    if (step + 1) % a.save_every == 0:
        d = os.path.join(a.out, f"step_{step + 1}")
        acc.save_state(d)
        log.info(f"saved state to {d}")
acc.wait_for_everyone()
log.info("finished")
acc.end_training()
