"""Tiny GPT-2 language-model fine-tune with accelerate, selectable faults.

accelerate launch --multi_gpu --num_processes 2 acc_train.py --fault none
"""
import argparse
import logging
import math
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--accum", type=int, default=2)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--outdir", default="runs/acc")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--mixed-precision", default=None)
args = p.parse_args()

logging.basicConfig(
    format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
    datefmt="%m/%d/%Y %H:%M:%S",
    level=logging.INFO,
)
logger = get_logger(__name__)

VOCAB = 256


class ByteText(Dataset):
    """Byte-level 'tokenizer' over a small local corpus."""

    def __init__(self, n, seq, seed):
        g = torch.Generator().manual_seed(seed)
        text = (" ".join(["the quick brown fox jumps over the lazy dog %d" % i for i in range(400)])).encode()
        self.data = torch.tensor(list(text), dtype=torch.long)
        self.starts = torch.randint(0, len(self.data) - seq - 1, (n,), generator=g)
        self.seq = seq

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        s = self.starts[i]
        return {"input_ids": self.data[s : s + self.seq]}


def main():
    kw = {}
    if args.mixed_precision:
        kw["mixed_precision"] = args.mixed_precision
    accelerator = Accelerator(gradient_accumulation_steps=args.accum, **kw)
    logger.info(accelerator.state, main_process_only=False)
    set_seed(42)

    cfg = GPT2Config(vocab_size=VOCAB, n_layer=2, n_embd=64, n_head=4, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train = DataLoader(ByteText(args.steps * args.bs * args.accum * 2, args.seq, 0), batch_size=args.bs, shuffle=True)
    if args.fault == "gather_uneven":
        # eval set sharded by hand: every process takes every world_size-th sample
        full = ByteText(31, args.seq, 1)
        shard = torch.utils.data.Subset(full, list(range(accelerator.process_index, len(full), accelerator.num_processes)))
        evald = DataLoader(shard, batch_size=args.bs)
        model, opt, train = accelerator.prepare(model, opt, train)
    else:
        evald = DataLoader(ByteText(32, args.seq, 1), batch_size=args.bs)
        model, opt, train, evald = accelerator.prepare(model, opt, train, evald)
    logger.info(f"***** Running training *****  num batches/rank = {len(train)}  grad accum = {args.accum}")

    model.train()
    step = 0
    running = 0.0
    for i, batch in enumerate(train):
        with accelerator.accumulate(model):
            out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
            loss = out.loss
            if args.fault == "accum_graph":
                # keep a running loss for logging ... and backprop the running value
                running = running + loss / args.accum
                accelerator.backward(running)
            else:
                running += loss.detach().float() / args.accum
                accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
        if accelerator.sync_gradients:
            step += 1
            rl = running.item() if torch.is_tensor(running) else running
            logger.info(f"step {step} | loss {rl:.4f} | ppl {math.exp(min(rl, 20)):.1f}")
            running = 0.0
            if args.save_every and step % args.save_every == 0:
                out_dir = os.path.join(args.outdir, f"checkpoint-{step}")
                logger.info(f"Saving state to {out_dir}")
                accelerator.save_state(out_dir)
            if step >= args.steps:
                break

    model.eval()
    losses = []
    for batch in evald:
        with torch.no_grad():
            out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
        if args.fault == "gather_uneven":
            # per-sample loss, gathered without padding across processes
            logits = out.logits[:, :-1]
            tgt = batch["input_ids"][:, 1:]
            per = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1), reduction="none")
            per = per.view(tgt.shape).mean(1)
            losses.append(accelerator.gather(per))
        else:
            losses.append(accelerator.gather_for_metrics(out.loss.repeat(batch["input_ids"].shape[0])))
    ev = torch.cat(losses).mean().item()
    logger.info(f"eval loss {ev:.4f} ppl {math.exp(ev):.2f}")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        os.makedirs(args.outdir, exist_ok=True)
        accelerator.unwrap_model(model).save_pretrained(os.path.join(args.outdir, "final"))
        logger.info("done")
    accelerator.end_training()


if __name__ == "__main__":
    main()
