"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer (offline: model built from a config, char-level tokenizer).

--fault none          : healthy
--fault old-eval-arg  : TrainingArguments(evaluation_strategy=...) (renamed to eval_strategy; removed in v5)
--fault filter-all    : length filter whose unit is wrong (chars vs tokens) drops every example
--train-files         : json files for datasets.load_dataset
"""
import argparse
import os
import warnings

import torch
from datasets import load_dataset
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling)
from tokenizers import Tokenizer, models, pre_tokenizers


def build_tokenizer():
    vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2}
    for w in "the model trains on tiny text with small steps and warm up schedule loss goes down slowly".split():
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none", choices=["none", "old-eval-arg", "filter-all"])
    p.add_argument("--train-files", nargs="+", default=["data/jsonl/train.jsonl"])
    p.add_argument("--valid-file", default="data/jsonl/valid.jsonl")
    p.add_argument("--out", default="outputs/hf_run")
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--min-len", type=int, default=4)
    a = p.parse_args()

    tok = build_tokenizer()
    raw = load_dataset("json", data_files={"train": a.train_files, "validation": a.valid_file})

    def enc(b):
        return tok(b["text"], truncation=True, max_length=32)

    ds = raw.map(enc, batched=True, remove_columns=["text"])
    if a.fault == "filter-all":
        # meant: keep examples with >= min_len tokens; min_len was given in characters from an old config
        ds["train"] = ds["train"].filter(lambda ex: len(ex["input_ids"]) >= a.min_len)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=2, eos_token_id=2, pad_token_id=0)
    model = GPT2LMHeadModel(cfg)
    common = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
                  max_steps=a.max_steps, learning_rate=5e-4, logging_steps=5, save_strategy="no",
                  report_to=[], use_cpu=True, dataloader_num_workers=0, eval_steps=10)
    if a.fault == "old-eval-arg":
        args = TrainingArguments(evaluation_strategy="steps", **common)
    else:
        args = TrainingArguments(eval_strategy="steps", **common)
    trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["validation"],
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    trainer.train()
    print(trainer.evaluate())


if __name__ == "__main__":
    main()
