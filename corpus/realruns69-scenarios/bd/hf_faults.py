"""Tiny GPT-2 LM training under accelerate launch (CPU, gloo).

--fault: none | vocab_overflow (rank whose shard was tokenized with a bigger, newer tokenizer)
"""
import argparse
import os
import time

import torch
from accelerate import Accelerator
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()


def main():
    acc = Accelerator(cpu=True)
    rank = acc.process_index
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=64, vocab_size=1000)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt = acc.prepare(model, opt)
    g = torch.Generator().manual_seed(rank)
    vocab_of_shard = 1000
    if args.fault == "vocab_overflow" and rank == args.fault_rank:
        vocab_of_shard = 1024  # shard re-tokenized after 24 special tokens were added
    data = torch.randint(0, vocab_of_shard, (args.steps * 4, 32), generator=g)
    acc.print(f"world={acc.num_processes} params={sum(p.numel() for p in model.parameters())}")
    for step in range(args.steps):
        batch = data[step * 4:(step + 1) * 4]
        out = model(input_ids=batch, labels=batch)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        loss = acc.gather(out.loss.detach().reshape(1)).mean()
        if step % 3 == 0:
            acc.print(f"step {step} loss {loss.item():.4f}")
    acc.wait_for_everyone()
    acc.print("done")
    acc.end_training()


if __name__ == "__main__":
    main()
