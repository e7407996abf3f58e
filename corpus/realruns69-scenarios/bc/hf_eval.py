"""HF Trainer: tiny GPT-2 sequence classifier with periodic evaluation and compute_metrics.

--fault:
  none         healthy
  metric_key   metric_for_best_model="accuracy" but compute_metrics returns {"acc": ...}
  no_pad       tokenizer built without a pad token; eval/train use DataCollatorWithPadding
"""
import argparse, os, random
import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2ForSequenceClassification, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments, DataCollatorWithPadding)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/tmp/bc_hf")
p.add_argument("--epochs", type=float, default=2)
args = p.parse_args()

words = ["good", "great", "fine", "nice", "bad", "awful", "poor", "sad", "the", "movie", "was", "plot", "very", "and"]
vocab = {"[UNK]": 0, "[EOS]": 1}
if args.fault != "no_pad":
    vocab["[PAD]"] = 2
for w in words:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
kw = dict(unk_token="[UNK]", eos_token="[EOS]")
if args.fault != "no_pad":
    kw["pad_token"] = "[PAD]"
tok = PreTrainedTokenizerFast(tokenizer_object=tk, **kw)

random.seed(0)
def make(n):
    rows = []
    for _ in range(n):
        lab = random.randint(0, 1)
        pool = words[:4] if lab else words[4:8]
        k = random.randint(3, 12)
        rows.append({"text": " ".join(random.choice(pool + words[8:]) for _ in range(k)), "label": lab})
    return Dataset.from_list(rows)

train, evald = make(400), make(80)
enc = lambda b: tok(b["text"], truncation=True, max_length=32)
train = train.map(enc, batched=True, remove_columns=["text"])
evald = evald.map(enc, batched=True, remove_columns=["text"])

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=len(vocab), n_positions=64, num_labels=2,
                 pad_token_id=tok.pad_token_id, eos_token_id=1, bos_token_id=1)
model = GPT2ForSequenceClassification(cfg)


def compute_metrics(ev):
    logits, labels = ev
    acc = float((np.argmax(logits, -1) == labels).mean())
    return {"acc": acc} if args.fault == "metric_key" else {"accuracy": acc}


ta = TrainingArguments(
    output_dir=args.out, num_train_epochs=args.epochs, per_device_train_batch_size=16,
    per_device_eval_batch_size=32, learning_rate=5e-4, eval_strategy="steps", eval_steps=10,
    save_strategy="steps", save_steps=10, logging_steps=5, load_best_model_at_end=True,
    metric_for_best_model="accuracy", report_to="none", use_cpu=True, save_total_limit=2,
    dataloader_num_workers=0, disable_tqdm=False,
)
trainer = Trainer(model=model, args=ta, train_dataset=train, eval_dataset=evald,
                  data_collator=DataCollatorWithPadding(tok), compute_metrics=compute_metrics)
trainer.train()
print(trainer.evaluate())
