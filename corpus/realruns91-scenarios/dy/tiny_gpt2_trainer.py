#!/usr/bin/env python
"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer on a locally built tokenizer/corpus.

No downloads: the BPE tokenizer is trained here from a small synthetic corpus.
--fault none | no-pad (tokenizer without pad token, padded collation)
             | vocab (model config vocab smaller than the tokenizer's)
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

WORDS = ("loss gradient tensor rank node shard batch epoch layer token vocab model "
         "train eval step warmup cosine adam weight decay checkpoint resume").split()


def corpus(n, seed=0):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(6, 30))) for _ in range(n)]


def build_tokenizer(texts, vocab, with_pad):
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    specials = ["<unk>", "<|endoftext|>"] + (["<pad>"] if with_pad else [])
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab, special_tokens=specials))
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>",
              bos_token="<|endoftext|>")
    if with_pad:
        kw["pad_token"] = "<pad>"
    return PreTrainedTokenizerFast(**kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--out", default="/work/rr91/dy/run/gpt2_out")
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()

    texts = corpus(400)
    tok = build_tokenizer(texts, 300, with_pad=args.fault != "no-pad")
    # vocab: config vocab_size copied from the previous tokenizer build (before new merges were added)
    n_vocab = len(tok) if args.fault != "vocab" else len(tok) - 48
    cfg = GPT2Config(vocab_size=n_vocab, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)

    ds = Dataset.from_dict({"text": texts})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=64), batched=True,
                remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
    targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8,
                              max_steps=args.steps, logging_steps=5, save_strategy="no",
                              report_to=[], use_cpu=True, dataloader_num_workers=0,
                              learning_rate=5e-4, warmup_steps=5, disable_tqdm=False)
    trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collator)
    trainer.train()
    print("final train loss", trainer.state.log_history[-1])


if __name__ == "__main__":
    main()
