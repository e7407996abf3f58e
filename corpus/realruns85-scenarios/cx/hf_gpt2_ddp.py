"""Tiny GPT-2 language-model fine-tune under accelerate / DDP (gloo, CPU).

Flags choose gradient-checkpointing mode and DDP kwargs; used to reproduce
checkpointing + DDP interaction bugs.
"""
import argparse
import logging
import math
import os
import random
from datetime import timedelta

import torch
from accelerate import Accelerator, DistributedDataParallelKwargs, InitProcessGroupKwargs
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--gc", default="off", choices=["off", "reentrant", "nonreentrant"])
p.add_argument("--find-unused", action="store_true")
p.add_argument("--static-graph", action="store_true")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--freeze-embeddings-rank", type=int, default=-1,
               help="rank that freezes wpe (bug: per-host config override)")
p.add_argument("--eval-every", type=int, default=4)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)

VOCAB = 97


class ToyText(Dataset):
    """Synthetic token sequences: arithmetic progressions mod VOCAB."""

    def __init__(self, n=256, seqlen=32, seed=0):
        rng = random.Random(seed)
        self.items = []
        for _ in range(n):
            a, d = rng.randrange(VOCAB), rng.randrange(1, 7)
            self.items.append(torch.tensor([(a + d * i) % VOCAB for i in range(seqlen)]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return {"input_ids": self.items[i], "labels": self.items[i].clone()}


def main():
    ddp_kwargs = DistributedDataParallelKwargs(find_unused_parameters=args.find_unused,
                                               static_graph=args.static_graph)
    pg_kwargs = InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=30))
    acc = Accelerator(cpu=True, gradient_accumulation_steps=args.accum, kwargs_handlers=[ddp_kwargs, pg_kwargs])
    logger.info(acc.state, main_process_only=False)
    set_seed(42)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(cfg)
    if args.gc != "off":
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": args.gc == "reentrant"})
    if acc.process_index == args.freeze_embeddings_rank:
        model.transformer.wpe.weight.requires_grad_(False)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-4)
    dl = DataLoader(ToyText(), batch_size=8, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    logger.info(f"num params = {sum(p.numel() for p in model.parameters())}", main_process_only=True)
    bar = tqdm(range(args.steps), disable=not acc.is_local_main_process)
    step = 0
    while step < args.steps:
        for batch in dl:
            with acc.accumulate(model):
                out = model(**batch)
                acc.backward(out.loss)
                opt.step()
                opt.zero_grad()
            if acc.sync_gradients:
                step += 1
                bar.update(1)
                if step % args.eval_every == 0:
                    loss = acc.gather(out.loss.detach()[None]).mean().item()
                    logger.info(f"step {step}: loss {loss:.4f} ppl {math.exp(loss):.2f}")
            if step >= args.steps:
                break
    acc.wait_for_everyone()
    logger.info("finished training")
    acc.end_training()


if __name__ == "__main__":
    main()
