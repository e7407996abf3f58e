"""Tiny GPT-2 language-model fine-tune with accelerate (CPU, offline, local tokenizer)."""
import argparse
import math
import os
import time

import torch
from torch.utils.data import DataLoader


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--legacy-optim", action="store_true", help="use transformers' own AdamW (old recipe)")
    p.add_argument("--mixed-precision", default=None)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--pad-token", default="eos", help="eos: reuse eos as pad; none: leave tokenizer as built")
    return p.parse_args()


def build_tokenizer(tmpdir):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    text = ["the quick brown fox jumps over the lazy dog %d" % i for i in range(200)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<eos>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>"), text


def main():
    args = get_args()
    from accelerate import Accelerator
    from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
    if args.legacy_optim:
        from transformers import AdamW
    else:
        from torch.optim import AdamW

    acc = Accelerator(mixed_precision=args.mixed_precision)
    tok, text = build_tokenizer("/tmp")
    if args.pad_token == "eos":
        tok.pad_token = tok.eos_token
    enc = tok(text, truncation=True, max_length=args.seq, padding="max_length")
    ids = torch.tensor(enc["input_ids"])
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    opt = AdamW(model.parameters(), lr=3e-3)
    dl = DataLoader(ids, batch_size=8, shuffle=True)
    sched = get_linear_schedule_with_warmup(opt, 2, args.steps)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    acc.print(f"world={acc.num_processes} device={acc.device} mp={acc.mixed_precision} params={sum(p.numel() for p in model.parameters())}")
    step = 0
    model.train()
    while step < args.steps:
        for batch in dl:
            out = model(input_ids=batch, labels=batch)
            acc.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
            if step % 5 == 0:
                l = acc.gather(out.loss.detach()[None]).mean().item()
                acc.print(f"step {step} loss {l:.3f} ppl {math.exp(l):.1f} lr {sched.get_last_lr()[0]:.2e}")
            step += 1
            if step >= args.steps:
                break
    acc.wait_for_everyone()
    acc.print("done")


if __name__ == "__main__":
    main()
