"""Tiny GPT-2 causal-LM fine-tune with the Hugging Face Trainer on CPU/gloo (no downloads).

--best-at-end asks for load_best_model_at_end with the given --eval-strategy / --save-strategy.
"""
import argparse
import os

import torch
from datasets import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling, PreTrainedTokenizerFast)
from tokenizers import Tokenizer, models, pre_tokenizers

p = argparse.ArgumentParser()
p.add_argument("--out", default="out/hf")
p.add_argument("--max-steps", type=int, default=24)
p.add_argument("--eval-strategy", default="steps")
p.add_argument("--save-strategy", default="steps")
p.add_argument("--best-at-end", action="store_true")
p.add_argument("--final-eval", default="rank0", choices=["rank0", "all"], help="which ranks run the final evaluate()")
args = p.parse_args()

words = ("the model trains on tiny random sentences about nodes ranks gloo sockets and "
         "checkpoints while the loss goes down slowly every step").split()
vocab = {"[UNK]": 0, "[EOS]": 1}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]")
tok.pad_token = tok.eos_token

g = torch.Generator().manual_seed(0)
texts = [" ".join(words[i] for i in torch.randint(0, len(words), (24,), generator=g).tolist())
         for _ in range(256)]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=32, seed=0)

cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(
    output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, learning_rate=5e-4, logging_steps=4,
    eval_strategy=args.eval_strategy, eval_steps=8, save_strategy=args.save_strategy, save_steps=8,
    load_best_model_at_end=args.best_at_end, metric_for_best_model="eval_loss" if args.best_at_end else None,
    report_to=[], ddp_backend="gloo", use_cpu=True, dataloader_num_workers=0, seed=0,
    ddp_timeout=60,
)
trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
if args.final_eval == "all":
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        print("final eval:", metrics)
elif trainer.is_world_process_zero():
    print("final eval:", trainer.evaluate())
