#!/usr/bin/env python
"""HF Trainer variant of the text classification experiment (TrainingArguments from YAML)."""
import argparse
import os
import random
import sys

import numpy as np
import yaml
from sklearn.metrics import accuracy_score
from transformers import GPT2Config, GPT2ForSequenceClassification, Trainer, TrainingArguments

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nlp_trainer import build_tokenizer  # noqa: E402


class ListDS:
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def make(n, tok, k, seed):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n):
        ids = [rnd.randrange(60) for _ in range(rnd.randint(6, 24))]
        enc = tok(" ".join(f"w{i}" for i in ids), truncation=True, max_length=32, padding="max_length")
        enc["labels"] = sum(1 for i in ids if i % 7 == 0) % k
        rows.append(dict(enc))
    return ListDS(rows)


def metrics(p):
    return {"accuracy": accuracy_score(p.label_ids, np.argmax(p.predictions, -1))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--opt", nargs="*", default=[])
    a = ap.parse_args()
    cfg = yaml.safe_load(open(a.config))
    for o in a.opt:
        k, v = o.split("=", 1)
        sec, key = k.split(".", 1)
        cfg[sec][key] = yaml.safe_load(v)
    tok = build_tokenizer({"num_words": 60, "pad_token": "[PAD]", "max_length": 32})
    m = cfg["model"]
    model = GPT2ForSequenceClassification(GPT2Config(vocab_size=m["vocab_size"], n_layer=m["n_layer"],
                                                     n_embd=m["n_embd"], n_head=m["n_head"],
                                                     num_labels=m["num_labels"], pad_token_id=tok.pad_token_id))
    args = TrainingArguments(**cfg["training_args"])
    tr = Trainer(model=model, args=args, train_dataset=make(cfg["data"]["num_train"], tok, m["num_labels"], 0),
                 eval_dataset=make(cfg["data"]["num_val"], tok, m["num_labels"], 1), compute_metrics=metrics)
    tr.train()
    print(tr.evaluate())


if __name__ == "__main__":
    main()
