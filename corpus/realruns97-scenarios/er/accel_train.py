"""Custom accelerate training loop (accelerate launch --config_file ...): tiny GPT-2 LM on per-rank
JSONL shards written by a prep step, gradient accumulation, save_state every N steps.
--fault:
  none           healthy
  missing_shard  the prep step wrote shards for a 1-process run only; rank 1 opens a shard that does not exist
  (mixed precision / disk / path problems come from the config file or --ckpt-dir)
"""
import argparse, json, os, sys, time
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-dir", default="/work/rr97/er/runs/accel_data")
p.add_argument("--ckpt-dir", default="/work/rr97/er/runs/accel_ckpt")
p.add_argument("--steps", type=int, default=24)
p.add_argument("--save-every", type=int, default=12)
p.add_argument("--grad-accum", type=int, default=4)
p.add_argument("--cpu", action="store_true")
args = p.parse_args()

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import InitProcessGroupKwargs, set_seed
import logging
from tqdm.auto import tqdm
from transformers import DataCollatorForLanguageModeling
sys.path.insert(0, os.path.dirname(__file__))
import common

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger("accel_train")
acc = Accelerator(cpu=args.cpu, gradient_accumulation_steps=args.grad_accum,
                  kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
logger.info(acc.state, main_process_only=False)
set_seed(11)

# data prep (main process writes shards, everyone waits)
n_shards = 1 if args.fault == "missing_shard" else acc.num_processes
if acc.is_main_process:
    os.makedirs(args.data_dir, exist_ok=True)
    texts = common.make_texts(640, seed=9)
    per = len(texts) // n_shards
    for s in range(n_shards):
        with open(os.path.join(args.data_dir, f"shard-{s:05d}.jsonl"), "w") as f:
            for t in texts[s * per:(s + 1) * per]:
                f.write(json.dumps({"text": t}) + "\n")
    logger.info(f"wrote {n_shards} shard(s) to {args.data_dir}")
acc.wait_for_everyone()

tok = common.build_tokenizer()
shard = os.path.join(args.data_dir, f"shard-{acc.process_index:05d}.jsonl")
with open(shard) as f:
    rows = [json.loads(l)["text"] for l in f]
logger.info(f"rank {acc.process_index}: {len(rows)} rows from {shard}", main_process_only=False)
enc = [tok(t, truncation=True, max_length=48) for t in rows]
coll = DataCollatorForLanguageModeling(tok, mlm=False)
dl = torch.utils.data.DataLoader(enc, batch_size=8, shuffle=True, collate_fn=coll)

model = common.tiny_gpt2(len(tok))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)

step = 0
bar = tqdm(total=args.steps, disable=not acc.is_local_main_process, desc="train")
while step < args.steps:
    for batch in dl:
        with acc.accumulate(model):
            out = model(**batch)
            acc.backward(out.loss)
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step(); opt.zero_grad()
        if acc.sync_gradients:
            step += 1
            bar.update(1)
            loss = acc.gather(out.loss.detach()).mean().item()
            if step % 4 == 0:
                logger.info(f"step {step} loss {loss:.4f} lr {sched.get_last_lr()[0]:.2e}")
            if step % args.save_every == 0:
                path = os.path.join(args.ckpt_dir, f"step_{step}")
                acc.save_state(path)
                logger.info(f"saved state to {path}")
            if step >= args.steps:
                break
bar.close()
acc.wait_for_everyone()
logger.info("training finished")
acc.end_training()
