#!/usr/bin/env python
"""Tiny GPT-2 language model trained on a local toy corpus with a locally built tokenizer."""
import argparse, os, sys, time
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

CORPUS = [
    "the cat sat on the mat", "a dog ran in the park", "the model learns slowly",
    "loss goes down when the learning rate is right", "gradients flow through the network",
    "the quick brown fox jumps over the lazy dog", "tokens are mapped to ids",
    "small models train fast on cpu", "data parallel training splits the batch",
    "every rank sees a different shard of data",
] * 8


def build_tokenizer(add_pad):
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[UNK]", "[BOS]", "[EOS]"] + (["[PAD]"] if add_pad else [])
    tok.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=specials))
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if add_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--add-pad-token", action="store_true")
    p.add_argument("--vocab-size", type=int, default=0, help="0 = len(tokenizer)")
    p.add_argument("--extra-corpus", default=None, help="extra text file appended to this rank's shard")
    a = p.parse_args()

    from accelerate import Accelerator
    acc = Accelerator(cpu=True)
    tok = build_tokenizer(a.add_pad_token)
    vocab = a.vocab_size or len(tok)
    acc.print(f"tokenizer vocab={len(tok)} model vocab={vocab} processes={acc.num_processes}")
    cfg = GPT2Config(vocab_size=vocab, n_layer=2, n_head=2, n_embd=64, n_positions=64,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, opt = acc.prepare(model, opt)
    texts = CORPUS[acc.process_index::acc.num_processes]
    if a.extra_corpus:
        with open(a.extra_corpus) as f:
            texts = texts + [l.strip() for l in f if l.strip()]
    model.train()
    for step in range(a.steps):
        i = (step * a.batch_size) % len(texts)
        batch_txt = texts[i:i + a.batch_size]
        if len(batch_txt) < a.batch_size:
            batch_txt = batch_txt + texts[: a.batch_size - len(batch_txt)]
        enc = tok(batch_txt, padding=True, return_tensors="pt")
        labels = enc["input_ids"].clone()
        labels[enc["attention_mask"] == 0] = -100
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
        if step % 5 == 0:
            acc.print(f"step {step} loss {out.loss.item():.4f}")
    acc.print("training complete")


if __name__ == "__main__":
    main()
