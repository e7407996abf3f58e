"""Single-process training loop (tiny GPT-2 from a config, local random tokens).

Used for: Ctrl-C (SIGINT) mid-training, CPU-time / file-size limits, stdout piped into head,
and a healthy run with a faulthandler watchdog dump on one slow step.
"""
import argparse
import faulthandler
import logging
import os
import sys
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--bar", action="store_true")
p.add_argument("--ckpt-out", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--watchdog", type=float, default=0)
p.add_argument("--slow-step", type=int, default=-1)
p.add_argument("--log-every", type=int, default=1)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s - %(message)s")
log = logging.getLogger("trainer")
torch.manual_seed(0)
cfg = GPT2Config(n_layer=args.layers, n_embd=64, n_head=4, vocab_size=512, n_positions=128)
model = GPT2LMHeadModel(cfg)
log.info("model params: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.randint(0, 512, (256, args.seq))
if args.watchdog:
    faulthandler.dump_traceback_later(args.watchdog, repeat=True)
    log.info("stall watchdog armed: stack dump if a step exceeds %.0fs", args.watchdog)

it = range(1, args.steps + 1)
if args.bar:
    from tqdm import tqdm
    it = tqdm(it, desc="epoch 0", ncols=90)
for step in it:
    if args.watchdog:
        faulthandler.cancel_dump_traceback_later()
        faulthandler.dump_traceback_later(args.watchdog, repeat=False)
    idx = torch.randint(0, 256, (8,))
    batch = data[idx]
    out = model(input_ids=batch, labels=batch)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step == args.slow_step:
        # periodic evaluation shard reload from network storage (slow)
        log.info("reloading eval shard from storage ...")
        time.sleep(args.watchdog + 2)
    if step % args.log_every == 0:
        msg = f"step {step} loss {out.loss.item():.4f}"
        if args.bar:
            it.set_postfix(loss=f"{out.loss.item():.3f}")
        else:
            print(msg, flush=True)
    if args.ckpt_every and step % args.ckpt_every == 0:
        path = args.ckpt_out
        log.info("appending checkpoint for step %d to %s", step, path)
        import io
        buf = io.BytesIO()
        torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, buf)
        with open(path, "ab") as fh:
            fh.write(buf.getvalue())
if args.watchdog:
    faulthandler.cancel_dump_traceback_later()
log.info("training complete")
