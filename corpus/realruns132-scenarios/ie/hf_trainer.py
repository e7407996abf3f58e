"""Tiny GPT-2 fine-tuning with the HF Trainer. --fault selects a misconfiguration."""
import argparse, os, sys, math, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--out", default="out_trainer")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--resume", default=None)
p.add_argument("--eval-bs", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()

import torch
import tinyhf
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          DataCollatorWithPadding, TrainerCallback)
from transformers.utils import logging as hf_logging
hf_logging.set_verbosity_info() if args.fault == "none_verbose" else hf_logging.set_verbosity_warning()

rank = int(os.environ.get("RANK", 0))
tok = tinyhf.make_tokenizer(pad=args.fault not in ("nopad",))
model = tinyhf.make_model(tok)
if args.fault == "genconfig":
    # sampling defaults for the demo generations after training
    model.generation_config.temperature = 0.7
    model.generation_config.top_p = 0.9

texts = tinyhf.make_texts(96, seed=1)
ds = Dataset.from_dict({"text": texts})

def tokenize(batch):
    return tok(batch["text"], truncation=True, max_length=32)

if args.fault == "map_len":
    # buggy tokenization: packs the whole batch into one sequence but keeps other columns
    def tokenize(batch):
        enc = tok([" ".join(batch["text"])], truncation=True, max_length=64)
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "text": batch["text"]}
    ds = ds.map(tokenize, batched=True)
else:
    ds = ds.map(tokenize, batched=True, remove_columns=["text"])

split = ds.train_test_split(test_size=0.25, seed=0)
train_ds, eval_ds = split["train"], split["test"]

if args.fault == "nopad":
    collator = DataCollatorWithPadding(tok)           # tokenizer has no pad token
elif args.fault == "nolabels":
    collator = DataCollatorWithPadding(tok)           # pads, but never creates labels
else:
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

ta = dict(output_dir=args.out, per_device_train_batch_size=4, per_device_eval_batch_size=args.eval_bs,
          max_steps=args.steps, learning_rate=args.lr, logging_steps=2, report_to="none",
          save_steps=args.fault_step if args.fault in ("readonly_out", "genconfig") else 1000,
          eval_strategy="steps", eval_steps=6, disable_tqdm=False, use_cpu=True,
          dataloader_num_workers=args.workers, dataloader_persistent_workers=args.workers > 0, seed=42)
if args.fault == "strategy_mismatch":
    ta.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=5, save_strategy="epoch",
              metric_for_best_model="eval_loss")
if args.fault == "old_arg":
    ta.pop("eval_strategy"); ta["evaluation_strategy"] = "steps"
if args.fault == "nan":
    ta.update(logging_nan_inf_filter=False, logging_steps=1, max_grad_norm=0.0)
if args.fault == "none":
    ta.update(save_steps=6, save_total_limit=1)

targs = TrainingArguments(**ta)

trainer = Trainer(model=model, args=targs, train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=collator, processing_class=tok)
trainer.train(resume_from_checkpoint=args.resume)
if args.fault == "eval_rank0_only":
    if rank == 0:
        print("final eval:", trainer.evaluate())
else:
    metrics = trainer.evaluate()          # every rank takes part in the gather
    if rank == 0:
        print("final eval:", metrics)
