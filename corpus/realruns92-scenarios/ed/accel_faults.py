"""accelerate-launched training of a tiny GPT-2 (config-built, CPU, gloo).
--fault none | wait (pid files for an outside signal) ; --noise prints the usual harmless warnings/helpers."""
import argparse, os, subprocess, sys, time, warnings
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel
import logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--pid-dir", default="")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--noise", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.1)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("train")
acc = Accelerator(cpu=True, gradient_accumulation_steps=1)  # CPU-only nodes: gloo
if args.pid_dir:
    os.makedirs(args.pid_dir, exist_ok=True)
    open(os.path.join(args.pid_dir, f"rank{acc.process_index}.pid"), "w").write(str(os.getpid()))
logger.info(f"process {acc.process_index}/{acc.num_processes} device={acc.device}", main_process_only=False)
if args.noise and acc.is_main_process:
    r = subprocess.run(["bash", "-c", "python -c 'import wandb' 2>/dev/null || { echo 'wandb not installed, metrics will only be printed' >&2; exit 1; }"])
    logger.warning(f"tracker setup helper returned {r.returncode}; continuing without tracker")
rng = np.random.default_rng(0)
data = torch.from_numpy((rng.zipf(1.3, size=(1024, 33)) % 256).astype(np.int64))
dl = DataLoader(TensorDataset(data), batch_size=8, shuffle=True)
model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_head=2, n_embd=64))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
from tqdm.auto import tqdm
bar = tqdm(total=args.steps, disable=not acc.is_local_main_process, ncols=100)
while step < args.steps:
    for (b,) in dl:
        with acc.accumulate(model):
            out = model(input_ids=b[:, :-1], labels=b[:, :-1])
            acc.backward(out.loss)
            if args.noise and step == 3:
                acc.clip_grad_norm_(model.parameters(), float("nan") if False else 1.0)
            opt.step(); opt.zero_grad()
        step += 1
        bar.update(1); bar.set_postfix(loss=f"{out.loss.item():.3f}")
        if step % 10 == 0:
            logger.info(f"step {step} loss {acc.gather(out.loss.detach()).mean().item():.4f}")
        time.sleep(args.step_sleep)
        if step >= args.steps:
            break
acc.wait_for_everyone()
if acc.is_main_process:
    acc.unwrap_model(model).save_pretrained("/tmp/rr92ed_accel_out", safe_serialization=True)
logger.info("training done")
acc.end_training()
