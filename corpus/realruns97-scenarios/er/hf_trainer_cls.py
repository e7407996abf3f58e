"""Sentiment classification fine-tune (tiny GPT2ForSequenceClassification) with the HF Trainer.
Data is written to a local JSONL file and read back with datasets.load_dataset("json").
--fault:
  none           healthy
  label_col      the label column is called "sentiment" instead of "label"/"labels"
  float_labels   labels cast to float (e.g. scores read from a CSV) with num_labels=2
  sklearn        compute_metrics imports sklearn lazily (not installed in this env)
  min_len        length filter that (by a unit mistake) removes every example
  bad_json       one record of the JSONL file is broken (a truncated line from an interrupted export)
  worker_collate custom collate_fn run by 2 dataloader workers; some records lack the label
"""
import argparse, json, os, sys, logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--output-dir", default="/work/rr97/er/runs/cls")
p.add_argument("--data-dir", default="/work/rr97/er/runs/cls_data")
p.add_argument("--epochs", type=float, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--min-words", type=int, default=3)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = logging.getLogger("train_cls")

import numpy as np
import torch
from datasets import load_dataset
import transformers
from transformers import Trainer, TrainingArguments, DataCollatorWithPadding, set_seed
sys.path.insert(0, os.path.dirname(__file__))
import common

transformers.utils.logging.set_verbosity_info() if args.fault == "none" else None
set_seed(0)
os.makedirs(args.data_dir, exist_ok=True)
label_key = "sentiment" if args.fault == "label_col" else "label"
texts = common.make_texts(320, seed=3)
rows = []
for i, t in enumerate(texts):
    r = {"id": i, "text": t, label_key: common.sentiment(t)}
    if args.fault == "float_labels":
        r[label_key] = float(r[label_key])
    if args.fault == "worker_collate" and i % 97 == 96:
        del r[label_key]
    rows.append(r)
train_file = os.path.join(args.data_dir, f"train_{args.fault}.jsonl")
with open(train_file, "w") as f:
    for i, r in enumerate(rows):
        line = json.dumps(r)
        if args.fault == "bad_json" and i == 211:
            line = line[: len(line) // 2]
        f.write(line + "\n")
logger.info("wrote %d records to %s", len(rows), train_file)

ds = load_dataset("json", data_files={"train": train_file})["train"]
logger.info("loaded dataset: %s", ds)
ds = ds.train_test_split(test_size=0.2, seed=0)
tok = common.build_tokenizer()


def keep(ex):
    # min length in words; min_chars was meant, min_words * 10 passed by mistake
    limit = args.min_words * 10 if args.fault == "min_len" else args.min_words
    return len(ex["text"].split()) >= limit


ds = ds.filter(keep, desc="Filtering short reviews")
logger.info("after filtering: train=%d eval=%d", len(ds["train"]), len(ds["test"]))
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=48), batched=True,
            remove_columns=["text", "id"], desc="Running tokenizer on dataset")

model = common.tiny_classifier(len(tok), num_labels=2)


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = np.argmax(logits, axis=-1)
    out = {"accuracy": float((preds == labels).mean())}
    if args.fault == "sklearn":
        from sklearn.metrics import f1_score
        out["f1"] = f1_score(labels, preds)
    return out


pad = DataCollatorWithPadding(tok)


def collate(features):
    labels = torch.tensor([f["label"] for f in features])
    batch = pad([{k: v for k, v in f.items() if k != "label"} for f in features])
    batch["labels"] = labels
    return batch


targs = TrainingArguments(output_dir=args.output_dir, num_train_epochs=args.epochs,
                          per_device_train_batch_size=16, per_device_eval_batch_size=32,
                          learning_rate=1e-3, eval_strategy="epoch", save_strategy="no",
                          logging_steps=4, report_to="none", use_cpu=True,
                          dataloader_num_workers=args.workers, seed=0, log_level="info")
trainer = Trainer(model=model, args=targs, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=collate if args.fault == "worker_collate" else pad,
                  compute_metrics=compute_metrics, processing_class=tok)
trainer.train()
logger.info("final eval: %s", trainer.evaluate())
trainer.save_model(os.path.join(args.output_dir, "final"))
