"""Tiny GPT-2 language model trained with the HF Trainer on a locally built corpus and tokenizer."""
import argparse
import os
import random
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--out", default="work/hf")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--fault", default="", help="no-pad | vocab-const")
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--nan-filter-off", action="store_true")
p.add_argument("--lr", type=float, default=5e-4)
args = p.parse_args()

random.seed(0)
words = ("the model loss step data batch rank gradient token layer norm weight bias epoch "
         "train eval sample shard cache node worker seed optimizer schedule warmup decay").split()
corpus = [" ".join(random.choice(words) + (str(random.randint(0, 99)) if random.random() < 0.3 else "")
                   for _ in range(random.randint(8, 40))) for _ in range(600)]

tok_model = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok_model.pre_tokenizer = pre_tokenizers.Whitespace()
special = ["[UNK]", "[EOS]"] if args.fault == "no-pad" else ["[UNK]", "[PAD]", "[EOS]"]
tok_model.train_from_iterator(corpus, trainers.WordLevelTrainer(vocab_size=5000, special_tokens=special))
tok = PreTrainedTokenizerFast(tokenizer_object=tok_model, unk_token="[UNK]", eos_token="[EOS]",
                              model_max_length=32)
if args.fault != "no-pad":
    tok.pad_token = "[PAD]"

VOCAB = 256 if args.fault == "vocab-const" else len(tok)  # vocab size copied from an older config
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=VOCAB,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
model = GPT2LMHeadModel(cfg)
print(f"tokenizer vocab: {len(tok)}  model vocab_size: {cfg.vocab_size}  params: {model.num_parameters():,}")

ds = Dataset.from_dict({"text": corpus})
ds = ds.map(lambda b: tok(b["text"], truncation=args.fault != "no-trunc"), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.1, seed=0)

targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, per_device_eval_batch_size=8,
    learning_rate=args.lr, logging_steps=5, eval_strategy="steps", eval_steps=20, save_steps=20,
    report_to=[], use_cpu=True, seed=0, gradient_checkpointing=args.grad_ckpt,
    logging_nan_inf_filter=not args.nan_filter_off, dataloader_num_workers=0, disable_tqdm=False,
)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=collator, processing_class=tok)
trainer.train()
print("final eval:", trainer.evaluate())
