"""Local JSONL -> datasets (load_dataset/map/filter with worker processes) -> Trainer.

--make-data writes the JSONL files used by the runs (not part of a case log)."""
import argparse, os, sys, json, random
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences

p = argparse.ArgumentParser()
p.add_argument("--make-data", default=None)
p.add_argument("--files", default="data/train-*.jsonl")
p.add_argument("--num-proc", type=int, default=2)
p.add_argument("--pad-mode", default="longest")
p.add_argument("--min-words", type=int, default=0)
p.add_argument("--tok-nopad", action="store_true")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--outdir", default="out_data")
p.add_argument("--cache", default=None)
a = p.parse_args()

if a.make_data:
    os.makedirs(a.make_data, exist_ok=True)
    r = random.Random(0)
    for shard in range(4):
        rows = [{"id": shard * 100 + i, "prompt": s, "response": t, "source": "forum"}
                for i, (s, t) in enumerate(zip(sentences(100, seed=shard),
                                               sentences(100, seed=shard + 50, lo=2, hi=6)))]
        with open(os.path.join(a.make_data, f"train-{shard:05d}.jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    sys.exit(0)

from datasets import load_dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling, set_seed
set_seed(0)
tok = make_tokenizer(pad=not a.tok_nopad)
model = make_model(tok) if not a.tok_nopad else None

raw = load_dataset("json", data_files={"train": a.files}, split="train", cache_dir=a.cache)
print(raw)


def join(ex):
    ex["text"] = ex["prompt"].strip() + " ? " + ex["response"].strip()
    return ex


def long_enough(ex):
    return len(ex["text"].split()) >= a.min_words


def tokenize(batch):
    return tok(batch["text"], padding=a.pad_mode, truncation=True, max_length=32)


ds = raw.map(join, num_proc=a.num_proc, desc="format")
ds = ds.filter(long_enough, num_proc=a.num_proc, desc="length filter")
ds = ds.map(tokenize, batched=True, num_proc=a.num_proc, remove_columns=ds.column_names,
            desc="tokenize")
print(f"{len(ds)} training rows after filtering")
if model is None:
    model = make_model(tok)
args = TrainingArguments(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.steps,
                         logging_steps=5, report_to=[], use_cpu=True, save_strategy="no")
tr = Trainer(model=model, args=args, train_dataset=ds,
             data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
tr.train()
tr.save_model(a.outdir)
