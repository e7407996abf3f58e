"""Variant of hf_trainer.py in the run_clm.py layout: TrainingArguments first, dataset preprocessing under main_process_first."""
import argparse, os, sys, logging, math
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          DataCollatorWithPadding, default_data_collator, TrainerCallback, set_seed)
from common_tiny import build_tokenizer, build_model, make_texts, base_vocab_size

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr100/fb/work/out")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--resume", default=None)
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--num-samples", dest="n", type=int, default=400)
p.add_argument("--ddp-timeout", type=int, default=1800)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = logging.getLogger(__name__)
rank = int(os.environ.get("RANK", "0"))
set_seed(42)

tok = build_tokenizer(with_pad=args.fault != "no_pad",
                      extra_tokens=8 if args.fault == "added_tokens_no_resize" else 0)
model = build_model(vocab_size=base_vocab_size())
if args.fault == "ddp_unused":
    model.value_head = torch.nn.Linear(64, 1)   # added for a later RLHF stage, not used in forward
if args.fault == "freeze_emb":
    # second stage: keep embeddings frozen, continue from the stage-1 checkpoint
    for prm in model.transformer.wte.parameters():
        prm.requires_grad = False
    for prm in model.transformer.wpe.parameters():
        prm.requires_grad = False
logger.info(f"Model parameters: {model.num_parameters():,}  vocab={len(tok)}")

ta = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=args.steps, learning_rate=args.lr, logging_steps=5, save_steps=10,
          eval_strategy="steps", eval_steps=20, report_to="none", use_cpu=True,
          dataloader_num_workers=args.workers, seed=42, save_total_limit=3, disable_tqdm=False,
          ddp_timeout=args.ddp_timeout)
if args.fault == "best_model_strategy":
    ta.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="epoch")
if args.fault == "ddp_unused":
    ta.update(ddp_find_unused_parameters=False)
training_args = TrainingArguments(**ta)
raw = Dataset.from_dict({"text": make_texts(args.n, seed=1)})
split = raw.train_test_split(test_size=0.1, seed=0)

def tokenize(batch):
    return tok(batch["text"], truncation=True, max_length=32)

def tokenize_labels(batch):
    enc = tok(batch["text"], truncation=True, max_length=32)
    enc["labels"] = [ids[:] for ids in enc["input_ids"]]
    return enc

def group_texts(batch):
    # concatenate then chunk into blocks of 16 tokens (run_clm style)
    enc = tok(batch["text"])
    ids = sum(enc["input_ids"], [])
    block = 16
    total = (len(ids) // block) * block
    out = {"input_ids": [ids[i:i + block] for i in range(0, total, block)]}
    out["attention_mask"] = [[1] * block for _ in out["input_ids"]]
    out["labels"] = [x[:] for x in out["input_ids"]]
    return out

if args.fault in ("default_collator_unpadded",):
    fn = tokenize_labels
else:
    fn = tokenize
if args.fault == "group_texts_keep_text":
    train = split["train"].map(group_texts, batched=True, desc="Grouping texts in chunks of 16")
elif args.fault == "renamed_columns":
    train = split["train"].map(fn, batched=True, remove_columns=["text"], desc="Running tokenizer on dataset")
    train = train.rename_columns({"input_ids": "ids", "attention_mask": "mask"})
else:
    with training_args.main_process_first(desc="dataset map pre-processing"):
        train = split["train"].map(fn, batched=True, remove_columns=["text"], desc="Running tokenizer on dataset")
with training_args.main_process_first(desc="dataset map pre-processing"):
    evald = split["test"].map(fn, batched=True, remove_columns=["text"], desc="Running tokenizer on dataset")

if args.fault == "added_tokens_no_resize":
    # domain markers prepended to every sample, but the embedding matrix was never resized
    def add_marker(ex, idx):
        ex["input_ids"] = [tok.convert_tokens_to_ids(f"<extra_{idx % 8}>")] + ex["input_ids"]
        ex["attention_mask"] = [1] + ex["attention_mask"]
        return ex
    train = train.map(add_marker, with_indices=True)

if args.fault == "default_collator_unpadded":
    collator = default_data_collator
elif args.fault == "worker_collate_bug":
    base = DataCollatorForLanguageModeling(tok, mlm=False)
    def collator(features):
        # drop over-long samples; typo in key name
        features = [f for f in features if len(f["input_ids"]) <= 30 and f["attention_mak"]]
        return base(features)
elif args.fault == "padding_collator_no_labels":
    collator = DataCollatorWithPadding(tok)
else:
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = logits.argmax(-1)
    if args.fault == "eval_metrics_bug":
        mask = labels != -100
        # shift like the model does
        acc = (preds[:, :-1][mask[:, 1:]] == labels[:, 1:][mask[:, 1:]]).mean()
        return {"accuracy": acc, "perplexity": math.exp(eval_pred.metrics["eval_loss"])}
    mask = labels[:, 1:] != -100
    return {"accuracy": float((preds[:, :-1][mask] == labels[:, 1:][mask]).mean())}

class PrintCB(TrainerCallback):
    def on_log(self, a, state, control, logs=None, **kw):
        pass



trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=evald,
                  data_collator=collator, processing_class=tok, compute_metrics=compute_metrics)
result = trainer.train(resume_from_checkpoint=args.resume)
metrics = result.metrics
trainer.log_metrics("train", metrics)
trainer.save_model()
m = trainer.evaluate()
trainer.log_metrics("eval", m)
logger.info("*** done ***")
