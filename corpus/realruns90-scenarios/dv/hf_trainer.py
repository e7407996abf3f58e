"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer (offline, locally built model/tokenizer/data).

--args-style  selects how TrainingArguments are written:
  good        current argument names, consistent strategies
  legacy      copied from an older notebook (evaluation_strategy=...)
  best-model  load_best_model_at_end with eval/save strategies that do not match
--model       'scratch' builds GPT2Config locally; anything else goes through from_pretrained
"""
import argparse
import os

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling, AutoModelForCausalLM)

p = argparse.ArgumentParser()
p.add_argument("--args-style", default="good")
p.add_argument("--model", default="scratch")
p.add_argument("--out", default="/work/rr90/dv/runs/hf_out")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--report-to", default="none")
a = p.parse_args()

words = ("the model reads a token and predicts the next token while the loss goes down "
         "slowly over many steps of training on a small corpus of text").split()
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

import random
random.seed(0)
texts = [" ".join(random.choice(words) for _ in range(random.randint(8, 20))) for _ in range(96)]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=24),
                                           batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.2, seed=0)

if a.model == "scratch":
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=32, n_layer=2, n_head=2, n_embd=64,
                                       pad_token_id=0, eos_token_id=2, bos_token_id=2))
else:
    model = AutoModelForCausalLM.from_pretrained(a.model)

common = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
              max_steps=a.steps, learning_rate=5e-4, logging_steps=2, report_to=a.report_to,
              use_cpu=True, dataloader_num_workers=0, seed=0)
if a.args_style == "good":
    targs = TrainingArguments(eval_strategy="steps", eval_steps=6, save_strategy="no", **common)
elif a.args_style == "legacy":
    targs = TrainingArguments(evaluation_strategy="steps", eval_steps=6, save_strategy="steps",
                              save_steps=6, **common)
elif a.args_style == "best-model":
    targs = TrainingArguments(eval_strategy="steps", eval_steps=5, save_strategy="epoch",
                              load_best_model_at_end=True, metric_for_best_model="eval_loss", **common)

trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
print(trainer.evaluate())
