"""Custom training loop ported to accelerate in 2021 (accelerate 0.x / transformers 4.x era)."""
import argparse, time, math
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fp16", action="store_true")
args = p.parse_args()

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
if args.fault == "adamw_import":
    from transformers import AdamW
else:
    from torch.optim import AdamW

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger(__name__)

if args.fault == "fp16_kwarg":
    accelerator = Accelerator(fp16=args.fp16)
else:
    accelerator = Accelerator(mixed_precision="fp16" if args.fp16 else "no")
logger.info(accelerator.state, main_process_only=False)

cfg = GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, 128, (256, 24), generator=g)
dl = DataLoader(TensorDataset(ids), batch_size=8, shuffle=True)
opt = AdamW(model.parameters(), lr=3e-4)
sched = get_linear_schedule_with_warmup(opt, 2, args.steps)
model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)
model.train()
step = 0
for (batch,) in dl:
    out = model(input_ids=batch, labels=batch)
    accelerator.backward(out.loss)
    opt.step(); sched.step(); opt.zero_grad()
    step += 1
    if step % 3 == 0:
        loss = accelerator.gather(out.loss.detach()).mean().item()
        logger.info(f"step {step} loss {loss:.4f} ppl {math.exp(loss):.1f} lr {sched.get_last_lr()[0]:.2e}")
    time.sleep(0.05)
    if step >= args.steps:
        break
accelerator.wait_for_everyone()
logger.info("training complete")
