"""SFT / DPO fine-tuning of a tiny GPT-2 with TRL. --data selects the dataset layout."""
import argparse, os, sys, random
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences

p = argparse.ArgumentParser()
p.add_argument("--mode", default="sft", choices=["sft", "dpo"])
p.add_argument("--data", default="text")
p.add_argument("--template", action="store_true", help="give the tokenizer a chat template")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--outdir", default="out_trl")
a = p.parse_args()

import torch
from datasets import Dataset
from transformers import set_seed
set_seed(0)
tok = make_tokenizer(pad=True, chat_template=a.template)
model = make_model(tok)
q = sentences(128, seed=5, lo=3, hi=6)
ans = sentences(128, seed=6, lo=2, hi=5)
bad = sentences(128, seed=7, lo=2, hi=5)

if a.data == "text":
    ds = Dataset.from_dict({"text": [x + " " + y for x, y in zip(q, ans)]})
elif a.data == "instruction":      # alpaca-style columns, no formatting function given
    ds = Dataset.from_dict({"instruction": q, "output": ans})
elif a.data == "messages":
    ds = Dataset.from_dict({"messages": [[{"role": "user", "content": x},
                                          {"role": "assistant", "content": y}]
                                         for x, y in zip(q, ans)]})
elif a.data == "pref":
    ds = Dataset.from_dict({"prompt": q, "chosen": ans, "rejected": bad})
elif a.data == "pref-ranked":      # preference data exported as answer + score columns
    ds = Dataset.from_dict({"prompt": q, "answer": ans, "score": [random.random() for _ in q]})
elif a.data == "pref-chat":
    ds = Dataset.from_dict({
        "chosen": [[{"role": "user", "content": x}, {"role": "assistant", "content": y}]
                   for x, y in zip(q, ans)],
        "rejected": [[{"role": "user", "content": x}, {"role": "assistant", "content": y}]
                     for x, y in zip(q, bad)]})

common = dict(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.steps,
              learning_rate=5e-4, logging_steps=5, report_to=[], use_cpu=True,
              save_strategy="no")
if a.mode == "sft":
    from trl import SFTConfig, SFTTrainer
    cfg = SFTConfig(max_length=48, **common)
    tr = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
else:
    from trl import DPOConfig, DPOTrainer
    cfg = DPOConfig(max_length=48, beta=0.1, **common)
    tr = DPOTrainer(model=model, ref_model=None, args=cfg, train_dataset=ds, processing_class=tok)
tr.train()
tr.save_model(a.outdir)
print("saved", a.outdir)
