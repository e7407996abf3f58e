"""Tiny causal-LM / classifier fine-tune with the Hugging Face Trainer, fully offline.

--fault none | no_pad | bad_args | strategy_mismatch
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorWithPadding, GPT2Config, GPT2ForSequenceClassification,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr70/bf/runs/hf")
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

WORDS = ("the a model loss step data token batch rank gpu cpu train eval good bad "
         "fast slow small large checkpoint resume warmup decay").split()


def build_tokenizer(with_pad):
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    if with_pad:
        vocab["[PAD]"] = 2
    for w in WORDS:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def build_data(tok, n=256):
    rng = random.Random(0)
    rows = []
    for _ in range(n):
        L = rng.randint(4, 20)
        words = [rng.choice(WORDS) for _ in range(L)]
        label = int(sum(w in ("good", "fast", "small") for w in words) > 1)
        rows.append({"text": " ".join(words), "label": label})
    ds = Dataset.from_list(rows)
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    return ds.train_test_split(test_size=0.125, seed=0)


def main():
    tok = build_tokenizer(with_pad=args.fault != "no_pad")
    # notebook cell: "GPT2 has no pad token, use eos" was dropped when porting to a script
    splits = build_data(tok)
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                     num_labels=2, pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else None)
    model = GPT2ForSequenceClassification(cfg)
    ta = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
              max_steps=args.steps, learning_rate=5e-4, logging_steps=5, save_strategy="no",
              report_to=[], use_cpu=True, dataloader_num_workers=0, seed=0, disable_tqdm=False)
    if args.fault == "none":
        ta.update(eval_strategy="steps", eval_steps=10, warmup_steps=0.1)
    if args.fault == "strategy_mismatch":
        ta.update(eval_strategy="epoch", save_strategy="steps", save_steps=10, load_best_model_at_end=True,
                  metric_for_best_model="eval_loss")
    if args.fault == "bad_args":
        # arguments copied from an older notebook
        ta.update(evaluation_strategy="steps", eval_steps=10)
    targs = TrainingArguments(**ta)
    trainer = Trainer(model=model, args=targs, train_dataset=splits["train"], eval_dataset=splits["test"],
                      data_collator=DataCollatorWithPadding(tok), processing_class=tok)
    trainer.train()
    if args.fault == "none":
        print(trainer.evaluate())


if __name__ == "__main__":
    main()
