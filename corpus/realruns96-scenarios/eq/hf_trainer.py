"""transformers.Trainer fine-tuning of a tiny GPT-2 on CPU; --fault selects a real bug/misconfiguration.
Works single-process (python) and under torchrun/accelerate launch (Trainer sets up DDP, gloo)."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(__file__))
from tinyhf import make_tokenizer, make_model, sentences
import torch
import numpy as np
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling, TrainerCallback,
                          EarlyStoppingCallback, default_data_collator)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank on which the fault is induced (when rank-specific)")
p.add_argument("--step", type=int, default=6)
p.add_argument("--out", default="/tmp/rr96eq_out")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--resume", default=None)
p.add_argument("--n_embd", type=int, default=64)
p.add_argument("--logging", action="store_true", help="python logging with timestamps")
a = p.parse_args()
RANK = int(os.environ.get("RANK", "0"))

if a.logging:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    import transformers; transformers.utils.logging.set_verbosity_info()
log = logging.getLogger("finetune")

tok = make_tokenizer(pad=(a.fault != "nopad"),
                     extra_special=(["<|user|>", "<|assistant|>", "<|end|>"] if a.fault == "vocab" else ()))
model = make_model(n_embd=a.n_embd)
if a.fault == "vocab":
    # forgot model.resize_token_embeddings(len(tok))
    pass
texts = sentences(96, seed=RANK if a.fault == "labels" else 0)
if a.fault == "vocab":
    texts = [f"<|user|> {t} <|end|>" if i % 3 else t for i, t in enumerate(texts)]
if a.fault == "longtext":
    # a few long documents; length statistics computed on the raw text (no truncation) before training
    texts = texts + [" ".join(texts[i:i + 8]) for i in range(0, 40, 8)]
    lens = [len(x) for x in tok(texts)["input_ids"]]
    print(f"[rank{RANK}] corpus: {len(texts)} docs, max {max(lens)} tokens, mean {sum(lens)/len(lens):.1f}", flush=True)
ds = Dataset.from_dict({"text": texts})

def tok_fn(b):
    return tok(b["text"], truncation=True, max_length=32)

collator = DataCollatorForLanguageModeling(tok, mlm=False)
remove = ["text"]
if a.fault == "nopad":
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
if a.fault == "collate":
    # returns variable-length tensors and uses torch's default_collate
    def tok_fn(b):
        enc = tok(b["text"], truncation=True, max_length=32)
        enc["labels"] = [list(x) for x in enc["input_ids"]]
        return enc
    collator = torch.utils.data.default_collate
    ds = ds.map(tok_fn, batched=True, remove_columns=remove).with_format("torch")
elif a.fault == "labels":
    # labels built with a different max_length than input_ids
    def tok_fn(b):
        enc = tok(b["text"], truncation=True, max_length=32, padding="max_length")
        lab = tok(b["text"], truncation=True, max_length=24 if RANK == a.rank else 32, padding="max_length")["input_ids"]
        enc["labels"] = lab
        return enc
    collator = default_data_collator
    ds = ds.map(tok_fn, batched=True, remove_columns=remove)
elif a.fault == "nolabels":
    # dataset "cleanup" drops the labels column; model gets no labels -> no loss
    def tok_fn(b):
        return tok(b["text"], truncation=True, max_length=32, padding="max_length")
    collator = default_data_collator
    ds = ds.map(tok_fn, batched=True, remove_columns=remove)
elif a.fault == "colremoved":
    # keep raw text and tokenize in the collator -> Trainer drops 'text' (remove_unused_columns)
    def collator(feats):
        return tok([f["text"] for f in feats], padding=True, return_tensors="pt")
else:
    ds = ds.map(tok_fn, batched=True, remove_columns=remove)

split = ds.train_test_split(test_size=0.25, seed=0)
train_ds, eval_ds = split["train"], split["test"]
if a.fault == "iterable":
    train_ds = train_ds.to_iterable_dataset()

kw = dict(output_dir=a.out, per_device_train_batch_size=4, per_device_eval_batch_size=4, learning_rate=5e-4,
          max_steps=a.steps, logging_steps=2, save_strategy="no", eval_strategy="no", report_to=[],
          use_cpu=True, ddp_timeout=30, dataloader_num_workers=0, seed=0,
          disable_tqdm=False)
if "WORLD_SIZE" in os.environ:
    kw["ddp_backend"] = "gloo"
callbacks = []
compute_metrics = None
if a.fault == "iterable":
    kw.update(max_steps=-1, num_train_epochs=2)
if a.fault in ("shared", "readonly"):
    kw.update(save_strategy="steps", save_steps=a.step)
if a.fault == "earlystop":
    kw.update(eval_strategy="steps", eval_steps=4, save_strategy="steps", save_steps=4,
              load_best_model_at_end=True, metric_for_best_model="eval_accuracy", greater_is_better=True)
    callbacks.append(EarlyStoppingCallback(early_stopping_patience=2))
if a.fault == "strategy":
    kw.update(eval_strategy="epoch", save_strategy="steps", save_steps=5, load_best_model_at_end=True)
if a.fault == "metrics":
    kw.update(eval_strategy="steps", eval_steps=a.step)
    def compute_metrics(ev):
        logits, labels = ev.predictions, ev.label_ids
        preds = logits.argmax(-1)
        # bug: labels are not shifted and contain -100 padding; accuracy via sklearn-style zip
        acc = (preds[:, :-1] == labels[:, 1:]).mean()
        return {"accuracy": float(acc), "perplexity": float(np.exp(ev.metrics["eval_loss"]))}
if a.fault == "fp16":
    kw.update(fp16=True)
if a.fault in ("bf16", "gradckpt"):
    kw.update(bf16=(a.fault == "bf16"))
if a.fault == "gradckpt":
    kw.update(gradient_checkpointing=True)
if a.fault == "ddp_ckpt_reentrant":
    kw.update(gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
              ddp_find_unused_parameters=True)
if a.fault == "resume_ok":
    kw.update(save_strategy="steps", save_steps=a.step)

class SafetensorsExport(TrainerCallback):
    """Exports the raw state dict next to each checkpoint for the serving team."""
    def on_save(self, args, state, control, model=None, **k):
        if state.is_world_process_zero:
            from safetensors.torch import save_file
            path = os.path.join(args.output_dir, f"export-step{state.global_step}.safetensors")
            save_file(model.state_dict(), path)
            print(f"[rank0] exported {path}", flush=True)
if a.fault == "shared":
    callbacks.append(SafetensorsExport())

class Printer(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **k):
        if state.is_world_process_zero and logs:
            log.info("step %d: %s", state.global_step, logs)
    def on_step_end(self, args, state, control, **k):
        if a.fault == "sigkill" and RANK == a.rank and state.global_step == a.step:
            os.kill(os.getpid(), 9)
if a.logging:
    callbacks.append(Printer())
if a.fault == "sigkill":
    callbacks.append(Printer())

args = TrainingArguments(**kw)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=collator, processing_class=tok, callbacks=callbacks,
                  compute_metrics=compute_metrics)
res = trainer.train(resume_from_checkpoint=a.resume)
print(f"[rank{RANK}] train done: {res.metrics}", flush=True)
if a.fault in ("longtext",) or a.fault == "gradckpt" or a.fault == "bf16" or a.fault == "resume_ok" or a.fault == "none":
    m = trainer.evaluate()
    print(f"[rank{RANK}] eval: {m}", flush=True)
