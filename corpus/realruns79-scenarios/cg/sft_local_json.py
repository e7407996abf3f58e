"""SFT-style fine-tuning of a tiny GPT-2 on local JSON-lines conversations with the HF Trainer.

--fault:
  none           healthy
  bad-jsonl      one line of the exported train.jsonl is cut off (export job killed mid-write)
  chat-template  conversations rendered with apply_chat_template on a base tokenizer without a template
"""
import argparse
import json
import logging
import os
import sys

import datasets
import torch
from datasets import load_dataset
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel, Trainer,
                          TrainingArguments)

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="/work/rr79/cg/tmp/sft_data")
p.add_argument("--out", default="/work/rr79/cg/tmp/sft")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("sft")
datasets.logging.set_verbosity_info()
torch.manual_seed(0)

# --- export step (normally a separate job) ---
os.makedirs(args.data, exist_ok=True)
path = os.path.join(args.data, f"train-{args.fault}.jsonl")
texts, _ = make_corpus(200, seed=5)
lines = [json.dumps({"messages": [{"role": "user", "content": t}, {"role": "assistant", "content": t[::-1]}]})
         for t in texts]
if args.fault == "bad-jsonl":
    lines[137] = lines[137][:57]          # truncated record
with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
log.info("wrote %s (%d lines)", path, len(lines))

tok = build_tokenizer()
if args.fault != "chat-template":
    tok.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} "
                         "{% endfor %}{{ eos_token }}")
raw = load_dataset("json", data_files={"train": path}, cache_dir=os.path.join(args.data, "cache"))
log.info("%s", raw)


def render(ex):
    text = tok.apply_chat_template(ex["messages"], tokenize=False)
    return tok(text, truncation=True, max_length=48)


ds = raw["train"].map(render, remove_columns=["messages"])
cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=1, eos_token_id=1, pad_token_id=2)
model = GPT2LMHeadModel(cfg)
ta = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, max_steps=20, logging_steps=5,
                       save_strategy="no", report_to="none", use_cpu=True)
trainer = Trainer(model=model, args=ta, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
log.info("done")
