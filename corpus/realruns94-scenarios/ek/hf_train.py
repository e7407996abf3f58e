"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer on a locally built tokenizer and dataset."""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fail", default="none")
p.add_argument("--out", default="/work/rr94/ek/out/hf")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--final-eval", default="rank0", choices=["rank0", "all"])
p.add_argument("--vocab-size", type=int, default=0, help="model vocab size (0 = len(tokenizer))")
args = p.parse_args()

TEXT = ("the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat "
        "a small model learns to predict the next word from the words before it ").split()
lines = [" ".join(TEXT[i % 20: i % 20 + 8 + i % 7]) for i in range(400)]
extra = [f"tok{i}" for i in range(300)]  # domain vocabulary added after the model config was written
lines += [" ".join(extra[i: i + 6]) for i in range(0, 300, 6)]

tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
if args.fail != "no-pad":
    tokenizer.pad_token = "[PAD]"

vocab = args.vocab_size or len(tokenizer)
cfg = GPT2Config(vocab_size=vocab, n_layer=2, n_head=2, n_embd=64, n_positions=64,
                 bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
model = GPT2LMHeadModel(cfg)

ds = Dataset.from_dict({"text": lines}).shuffle(seed=0)


def enc(b):
    return tokenizer(b["text"], truncation=True, max_length=32)


ds = ds.map(enc, batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.1, seed=0)

ta = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=args.steps, logging_steps=5, learning_rate=5e-4, report_to=[], use_cpu=True,
          save_strategy="no", eval_strategy="no", dataloader_num_workers=0, disable_tqdm=False)
if args.fail == "best-model":
    ta.update(load_best_model_at_end=True, metric_for_best_model="eval_loss",
              eval_strategy="steps", eval_steps=10, save_strategy="epoch")
if args.fail == "none":
    ta.update(eval_strategy="steps", eval_steps=15, warmup_steps=5)
targs = TrainingArguments(**ta)

collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=collator)
trainer.train()
if args.final_eval == "all":
    metrics = trainer.evaluate()
    if trainer.is_world_process_zero():
        print("final eval:", metrics)
elif trainer.is_world_process_zero():
    print("final eval:", trainer.evaluate())
