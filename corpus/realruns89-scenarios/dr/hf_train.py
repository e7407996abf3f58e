"""Tiny GPT-2 causal-LM fine-tune with HF Trainer (built from a config, local WordLevel tokenizer, no downloads)."""
import argparse, os, sys, logging, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "no_pad", "best_model_strategy"])
p.add_argument("--out", default="/work/rr89/dr/out/hf")
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

words = "the a model learns tokens from text data and loss goes down slowly while gradients flow".split()
vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
if args.fault != "no_pad":
    vocab["[PAD]"] = 3
for w in words: vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
special = dict(unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
if args.fault != "no_pad":
    special["pad_token"] = "[PAD]"
tok = PreTrainedTokenizerFast(tokenizer_object=tk, **special)

import random
rnd = random.Random(0)
texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(5, 15))) for _ in range(128)]
ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])

model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=32,
                                   bos_token_id=1, eos_token_id=2))
kw = dict(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps, logging_steps=1,
          report_to="none", use_cpu=True, save_strategy="no", dataloader_num_workers=0, disable_tqdm=False)
if args.fault == "best_model_strategy":
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=2, save_strategy="epoch",
              metric_for_best_model="loss")
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=ds, eval_dataset=ds.select(range(16)),
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
if targs.process_index == 0:
    print("final train loss", trainer.state.log_history[-1])
