"""Tiny GPT-2 (built from a config, char-level vocab) trained with Accelerate on CPU.

Meant to be started with `accelerate launch --cpu --num_processes N`.
Prints the usual HF noise: generation warnings, gradient-checkpointing/use_cache notices.
"""
import argparse
import math
import os
import time

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel

import logging

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
logger = get_logger("train_gpt2")

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40 +
        "a stitch in time saves nine. " * 40 + "all that glitters is not gold. " * 40)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--grad-ckpt", action="store_true")
    p.add_argument("--sample-every", type=int, default=20)
    args = p.parse_args()

    acc = Accelerator()
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    itos = {i: c for c, i in stoi.items()}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)

    cfg = GPT2Config(vocab_size=len(chars), n_positions=64, n_layer=2, n_head=2, n_embd=64,
                     bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, opt = acc.prepare(model, opt)
    logger.info(f"processes={acc.num_processes} params={sum(p.numel() for p in model.parameters())}",
                main_process_only=True)

    g = torch.Generator().manual_seed(100 + acc.process_index)
    model.train()
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=g)
        x = torch.stack([data[i:i + args.seq] for i in ix])
        out = model(input_ids=x, labels=x)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        loss = acc.gather(out.loss.detach()).mean().item()
        if step % 5 == 0:
            logger.info(f"step {step} loss {loss:.4f} ppl {math.exp(loss):.2f}", main_process_only=True)
        if step % args.sample_every == 0:
            model.eval()
            unwrapped = acc.unwrap_model(model)
            prompt = torch.tensor([[stoi[c] for c in "the quick "]])
            with torch.no_grad():
                gen = unwrapped.generate(prompt, max_new_tokens=20, do_sample=False)
            logger.info("sample: " + repr("".join(itos[int(t)] for t in gen[0])), main_process_only=False)
            model.train()
    acc.wait_for_everyone()
    if acc.is_main_process:
        os.makedirs(args.out, exist_ok=True)
        acc.unwrap_model(model).save_pretrained(args.out)
        logger.info(f"saved model to {args.out}")
    acc.end_training()


if __name__ == "__main__":
    main()
