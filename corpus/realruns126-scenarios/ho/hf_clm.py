"""Tiny causal-LM fine-tune with the HF Trainer, everything built locally (no hub access).

Options mirror the mistakes made when porting a run_clm-style script between configs.
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import transformers
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--out", default="runs/hf_out")
p.add_argument("--vocab-size", type=int, default=0, help="model vocab; 0 = len(tokenizer)")
p.add_argument("--block", type=int, default=32)
p.add_argument("--grouping", default="concat", choices=["concat", "lines"])
p.add_argument("--pad-token", default="<eos>")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--eval-strategy", default="no")
p.add_argument("--save-strategy", default="no")
p.add_argument("--load-best", action="store_true")
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--verbosity", default="info")
a = p.parse_args()

transformers.logging.set_verbosity(getattr(transformers.logging, a.verbosity.upper()))
transformers.logging.enable_default_handler()
transformers.logging.enable_explicit_format()
random.seed(0)
torch.manual_seed(0)

words = [f"w{i}" for i in range(900)]
lines = [" ".join(random.choice(words[: random.randint(50, 900)]) for _ in range(random.randint(5, 60)))
         for _ in range(400)]
vocab = {"<unk>": 0, "<eos>": 1}
for ln in lines:
    for w in ln.split():
        vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>", model_max_length=128)
if a.pad_token:
    tok.pad_token = a.pad_token

ds = Dataset.from_dict({"text": lines})
if a.grouping == "concat":
    def tok_fn(b):
        return tok([t + " <eos>" for t in b["text"]])
    def group(b):
        ids = sum(b["input_ids"], [])
        n = len(ids) // a.block * a.block
        chunks = [ids[i:i + a.block] for i in range(0, n, a.block)]
        return {"input_ids": chunks, "attention_mask": [[1] * a.block for _ in chunks]}
    # the whole corpus as one document first (run_clm style) -> long sequence warning
    tok(" ".join(lines))
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    ds = ds.map(group, batched=True, remove_columns=ds.column_names)
else:
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=a.block), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.1, seed=0)

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=128,
                 vocab_size=a.vocab_size or len(tok), bos_token_id=1, eos_token_id=1)
model = GPT2LMHeadModel(cfg)
print(f"tokenizer size {len(tok)}, model vocab {cfg.vocab_size}, params {model.num_parameters()}")

args = TrainingArguments(
    output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
    max_steps=a.max_steps, logging_steps=5, learning_rate=5e-4, warmup_steps=5,
    eval_strategy=a.eval_strategy, save_strategy=a.save_strategy, eval_steps=10, save_steps=20,
    load_best_model_at_end=a.load_best, gradient_checkpointing=a.grad_ckpt,
    report_to=[], use_cpu=True, dataloader_num_workers=0, disable_tqdm=False,
    logging_nan_inf_filter=False, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
print(trainer.evaluate())
