"""Tiny HF Trainer run (GPT-2 config, local word-level tokenizer, offline). --fault selects a real misconfig."""
import argparse, os, json, sys
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorWithPadding, DataCollatorForLanguageModeling)
from datasets import Dataset, load_dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr52/b/tmp/hf_out")
p.add_argument("--data", default="")
p.add_argument("--steps", type=int, default=12)
a = p.parse_args()

words = "the a model train loss step data token batch learn rate grad norm epoch eval save sample text small tiny".split()
vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
if a.fault != "no-pad":
    vocab["[PAD]"] = 3
for w in words:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
if a.fault != "no-pad":
    kw["pad_token"] = "[PAD]"
tok = PreTrainedTokenizerFast(**kw)

import random
rnd = random.Random(0)
if a.data:
    ds = load_dataset("json", data_files=a.data, split="train")
else:
    texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14))) for _ in range(64)]
    ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                 bos_token_id=1, eos_token_id=2, pad_token_id=vocab.get("[PAD]"))
model = GPT2LMHeadModel(cfg)

targs = dict(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, logging_steps=2,
             save_steps=6, learning_rate=5e-4, report_to=[], use_cpu=True, dataloader_num_workers=0,
             disable_tqdm=False)
if a.fault == "old-eval-arg":
    targs["evaluation_strategy"] = "steps"   # renamed to eval_strategy
if a.fault == "tensorboard":
    targs["report_to"] = ["tensorboard"]
if a.fault == "best-model":
    targs.update(eval_strategy="epoch", save_strategy="steps", load_best_model_at_end=True)
if a.fault == "lr-high":
    targs.update(learning_rate=3e4, max_grad_norm=None if False else 0.0, logging_steps=1)
args = TrainingArguments(**targs)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ds.select(range(8)) if "eval" in a.fault or a.fault=="best-model" else None,
                  data_collator=collator, processing_class=tok)
trainer.train()
print("final train done")
