"""Tiny GPT-2 fine-tune with the HF Trainer (offline: tokenizer and model built locally).

--fault none | strategy (load_best_model_at_end with mismatched eval/save strategies)
       | nopad (GPT-2 style tokenizer without pad token + padding collator)
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorForLanguageModeling, DataCollatorWithPadding, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr67/ax/tmp/hf_out")
p.add_argument("--max-steps", type=int, default=12)
p.add_argument("--eval-all-ranks", action="store_true", help="run the final evaluate() on every rank")
args = p.parse_args()

words = ("the model loss step rank data batch train eval token layer head gradient optimizer "
         "learning rate warmup schedule checkpoint save load shard node gpu cpu").split()
vocab = {w: i for i, w in enumerate(["<unk>", "<eos>"] + words)}
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>", bos_token="<eos>")
if args.fault != "nopad":
    tok.pad_token = tok.eos_token

import random
random.seed(0)
texts = [" ".join(random.choice(words) for _ in range(random.randint(5, 20))) for _ in range(256)]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
ds = ds.train_test_split(test_size=0.1, seed=0)

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=1, eos_token_id=1)
model = GPT2LMHeadModel(cfg)

targs = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, max_steps=args.max_steps,
             logging_steps=2, learning_rate=5e-4, report_to=[], use_cpu=True, dataloader_num_workers=0,
             save_strategy="no", eval_strategy="steps", eval_steps=6, ddp_backend="gloo")
if args.fault == "strategy":
    targs.update(load_best_model_at_end=True, save_strategy="epoch", eval_strategy="steps", metric_for_best_model="loss")
training_args = TrainingArguments(**targs)

if args.fault == "nopad":
    collator = DataCollatorWithPadding(tok)
else:
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

trainer = Trainer(model=model, args=training_args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=collator)
trainer.train()
if args.eval_all_ranks:
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        print("final eval:", metrics)
elif trainer.is_world_process_zero():
    print("final eval:", trainer.evaluate())
