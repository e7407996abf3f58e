"""Tiny BERT text classifier trained with transformers.Trainer (meant for torchrun, gloo, CPU).
--fault selects a real misconfiguration; --rank/--step select where it bites."""
import argparse, json, os, sys, time, logging
from datetime import timedelta
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--out", default="/work/rr88/dl/runs/hf")
p.add_argument("--resume", default=None)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--epochs", type=float, default=2)
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--save-steps", type=int, default=8)
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
log = logging.getLogger("train_cls")
if "RANK" in os.environ and not dist.is_initialized():
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
rank = int(os.environ.get("RANK", 0))

from datasets import load_dataset
from transformers import (AutoTokenizer, BertConfig, BertForSequenceClassification, Trainer, TrainingArguments,
                          DataCollatorWithPadding, TrainerCallback, set_seed)
import transformers
transformers.utils.logging.set_verbosity_info() if rank == 0 else transformers.utils.logging.set_verbosity_warning()
set_seed(42)

tok_dir = "/work/rr88/dl/assets/tok_nopad" if a.fault == "nopad" else "/work/rr88/dl/assets/tok"
tok = AutoTokenizer.from_pretrained(tok_dir)
raw = load_dataset("json", data_files="/work/rr88/dl/assets/reviews.jsonl", split="train")
raw = raw.train_test_split(test_size=0.125, seed=0)
label_col = {"no-loss": "target", "float-labels": "labels"}.get(a.fault, "label")
def enc(b):
    out = tok(b["text"], truncation=True, max_length=32)
    out[label_col] = b["label"]
    if a.fault == "float-labels" and rank == a.rank:
        # this rank's shard was exported from a pandas frame with a NaN-able label column -> float64
        out[label_col] = [float(x) for x in b["label"]]
    return out
ds = raw.map(enc, batched=True, keep_in_memory=True, remove_columns=["text", "label"])
cfg = BertConfig(vocab_size=len(tok), hidden_size=a.hidden, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=2 * a.hidden, max_position_embeddings=64, num_labels=3, pad_token_id=1)
model = BertForSequenceClassification(cfg)
if a.freeze_embeddings:
    for prm in model.bert.embeddings.parameters():
        prm.requires_grad = False

class TBLogger(TrainerCallback):
    """writes per-step scalars; the writer is only opened on the main process"""
    def __init__(self):
        self.writer = None
    def on_train_begin(self, args, state, control, **kw):
        if state.is_world_process_zero:
            self.writer = open(os.path.join(args.output_dir, "scalars.tsv"), "a")
    def on_log(self, args, state, control, logs=None, **kw):
        # BUG (intended guard was `if state.is_world_process_zero`)
        if a.fault == "callback-raise" and not state.is_world_process_zero and state.global_step >= a.step:
            self.writer.write(f"{state.global_step}\t{logs.get('loss')}\n")
        elif self.writer is not None:
            self.writer.write(f"{state.global_step}\t{logs.get('loss')}\n"); self.writer.flush()

class EvalOnMain(TrainerCallback):
    def __init__(self): self.trainer = None
    def on_step_end(self, args, state, control, **kw):
        if state.global_step == a.step and state.is_world_process_zero:
            log.info("running quick validation on main process only")
            self.trainer.evaluate()

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, num_train_epochs=a.epochs,
          learning_rate=5e-4, logging_steps=2, save_steps=a.save_steps, report_to="none", use_cpu=True,
          dataloader_num_workers=0, seed=42, disable_tqdm=False)
if a.fault == "removed-arg":
    kw["evaluation_strategy"] = "steps"; kw["eval_steps"] = 4
elif a.fault == "best-mismatch":
    kw.update(eval_strategy="steps", eval_steps=4, save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="eval_loss")
elif a.fault == "none":
    kw.update(eval_strategy="epoch", save_strategy="epoch")
else:
    kw.update(eval_strategy="no", save_strategy="steps")
args = TrainingArguments(**kw)
cbs = [TBLogger()]
ev = EvalOnMain()
if a.fault == "eval-one-rank":
    cbs.append(ev)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=DataCollatorWithPadding(tok), processing_class=tok, callbacks=cbs)
ev.trainer = trainer
res = trainer.train(resume_from_checkpoint=a.resume)
log.info("train result %s", res.metrics)
if a.fault == "none":
    m = trainer.evaluate(); log.info("eval %s", m)
trainer.save_model()
if dist.is_initialized():
    dist.destroy_process_group()
