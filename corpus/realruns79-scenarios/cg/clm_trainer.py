"""Causal-LM fine-tuning of a tiny GPT-2 with the HF Trainer, run_clm.py style (group_texts).

--fault:
  none             healthy (gradient checkpointing with use_cache left on, etc.)
  group-keep-cols  group_texts map() without remove_columns (rows change count)
  (disk / permission faults are induced from outside: --out on a small tmpfs, or run as another user)
"""
import argparse
import logging
import os
import sys
from itertools import chain

import torch
from datasets import Dataset
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel, Trainer,
                          TrainingArguments)
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr79/cg/tmp/clm")
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--grad-ckpt", action="store_true")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
log = logging.getLogger("run_clm")
log.setLevel(logging.INFO)
hf_logging.set_verbosity_info()
hf_logging.enable_default_handler()
hf_logging.enable_explicit_format()
torch.manual_seed(0)

tok = build_tokenizer()
texts, _ = make_corpus(600, seed=3)
raw = Dataset.from_dict({"text": texts})
block = 32


def tokenize_function(examples):
    return tok(examples["text"])


def group_texts(examples):
    concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
    total = (len(concatenated["input_ids"]) // block) * block
    result = {k: [t[i:i + block] for i in range(0, total, block)] for k, t in concatenated.items()}
    result["labels"] = result["input_ids"].copy()
    return result


tokenized = raw.map(tokenize_function, batched=True, remove_columns=["text"], desc="Running tokenizer on dataset")
if args.fault == "group-keep-cols":
    tokenized = raw.map(tokenize_function, batched=True, desc="Running tokenizer on dataset")
    lm = tokenized.map(lambda ex: group_texts({k: ex[k] for k in ("input_ids", "attention_mask")}),
                       batched=True, desc=f"Grouping texts in chunks of {block}")
else:
    lm = tokenized.map(group_texts, batched=True, desc=f"Grouping texts in chunks of {block}")
log.info("lm dataset: %s", lm)

cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=args.n_embd, n_layer=2, n_head=2,
                 bos_token_id=1, eos_token_id=1, pad_token_id=2)
model = GPT2LMHeadModel(cfg)
ta = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, learning_rate=1e-3,
                       max_steps=args.max_steps, logging_steps=5, save_steps=args.save_steps,
                       report_to="none", use_cpu=True, gradient_checkpointing=args.grad_ckpt,
                       disable_tqdm=False, seed=0)
trainer = Trainer(model=model, args=ta, train_dataset=lm, processing_class=tok,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
train_result = trainer.train()
trainer.save_model()
trainer.log_metrics("train", train_result.metrics)
trainer.save_metrics("train", train_result.metrics)
log.info("*** done ***")
