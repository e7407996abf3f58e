"""Hugging Face start-up scenarios (tiny GPT-2 built from config, local tokenizer)."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--out", default="/work/rr62/aj/out/hf")
args = p.parse_args()
import torch
from transformers import GPT2Config, GPT2LMHeadModel, TrainingArguments, Trainer, PreTrainedTokenizerFast, AutoTokenizer
from tokenizers import Tokenizer, models, pre_tokenizers
from datasets import Dataset

if args.fault == "hub-offline":
    tok = AutoTokenizer.from_pretrained("openai-community/gpt2")
else:
    vocab = {f"w{i}": i for i in range(100)}; vocab["[UNK]"] = 100
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); t.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", pad_token="[UNK]")
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=101, n_positions=32)
model = GPT2LMHeadModel(cfg)
texts = [" ".join(f"w{(i*7+j)%100}" for j in range(16)) for i in range(64)]
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
ds = ds.map(lambda b: {"labels": b["input_ids"]}, batched=True)
kw = dict(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps, logging_steps=4,
          report_to=[], save_strategy="no", use_cpu=True)
if args.fault == "removed-arg":
    kw.update(evaluation_strategy="steps", eval_steps=4)
if args.fault == "best-model-mismatch":
    kw.update(eval_strategy="steps", eval_steps=4, save_strategy="epoch", load_best_model_at_end=True)
ta = TrainingArguments(**kw)
tr = Trainer(model=model, args=ta, train_dataset=ds, eval_dataset=ds.select(range(8)))
tr.train()
print("training complete")
