"""Tiny GPT-2 fine-tuning with the HF Trainer; --fault selects a realistic bug/misconfiguration."""
import argparse, os, sys, logging, math
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import numpy as np
import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          DataCollatorWithPadding, TrainerCallback, GPT2ForSequenceClassification, GPT2Config,
                          default_data_collator)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank on which a rank-local fault is placed")
p.add_argument("--step", type=int, default=6, help="optimizer step at which a rank-local fault shows up")
p.add_argument("--out", default="out/run")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--n", type=int, default=256)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--logging-ts", action="store_true", help="python logging with timestamps")
p.add_argument("--vocab", type=int, default=0, help="extra vocab words")
a = p.parse_args()

if a.logging_ts:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
log = logging.getLogger("train_clm")
world = int(os.environ.get("WORLD_SIZE", 1))

tok = tinyhf.make_tokenizer(extra_words=a.vocab, pad=(a.fault != "no-pad-token"))
model = tinyhf.make_model(50257 if a.fault == "eval-oom" else len(tok))  # eval-oom: GPT-2 sized output vocab
texts = tinyhf.corpus(a.n, seed=1, extra_words=a.vocab)

if a.fault == "vocab-mismatch":
    # domain words added to the tokenizer after the model was built; resize_token_embeddings() forgotten
    tok.add_tokens(["<ckpt>", "<loss>", "<grad>"])
    # the bad sample lands in the batch that rank a.rank takes at optimizer step a.step (sequential sampler)
    j = (a.step * world + a.rank) * a.bs + 1
    texts[j] = texts[j] + " <ckpt> <grad>"

def tok_fn(batch):
    return tok(batch["text"], truncation=True, max_length=48)

ds = Dataset.from_dict({"text": texts})
if a.fault == "bad-jsonl":
    # corpus exported to jsonl by the preprocessing job; load it the usual way
    import json
    from datasets import load_dataset
    os.makedirs("out/data", exist_ok=True)
    path = f"out/data/corpus-{os.getpid()}.jsonl"
    with open(path, "w") as f:
        for i, t in enumerate(texts):
            line = json.dumps({"id": i, "text": t})
            if i == 200:
                line = line[:23]          # the exporter was killed mid-write on this record
            f.write(line + "\n")
    ds = load_dataset("json", data_files=path, split="train")
if a.fault == "seqcls-labels":
    # sentiment-style labels read from a 5-star column, but the head was built for 2 classes
    stars = [(i % 2) for i in range(a.n)]
    j0 = (a.step * world + a.rank) * a.bs
    for j in range(j0, j0 + a.bs):
        stars[j] = 4
    ds = ds.add_column("label", stars)
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64, num_labels=2,
                     pad_token_id=tok.pad_token_id)
    model = GPT2ForSequenceClassification(cfg)
    collator = DataCollatorWithPadding(tok)
elif a.fault == "labels-unpadded":
    def tok_lab(batch):
        enc = tok(batch["text"], truncation=True, max_length=48)
        enc["labels"] = [list(x) for x in enc["input_ids"]]
        return enc
    ds = ds.map(tok_lab, batched=True, remove_columns=["text"])
    collator = DataCollatorWithPadding(tok)   # pads input_ids/attention_mask only, not labels
elif a.fault == "no-pad-token":
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    collator = DataCollatorWithPadding(tok)
elif a.fault == "labels-dropped":
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    collator = DataCollatorWithPadding(tok)   # no labels produced for the causal LM
elif a.fault == "renamed-columns":
    def tok_ids(batch):
        enc = tok(batch["text"], truncation=True, max_length=48)
        return {"ids": enc["input_ids"], "mask": enc["attention_mask"]}
    ds = ds.map(tok_ids, batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
elif a.fault == "map-after-remove":
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    # length statistics for group_by_length, added later in the pipeline
    ds = ds.map(lambda b: {"n_words": [len(t.split()) for t in b["text"]]}, batched=True)
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
else:
    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

split = ds.train_test_split(test_size=0.125, seed=0, shuffle=False)
train_ds, eval_ds = split["train"], split["test"]

kw = dict(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=a.bs, per_device_eval_batch_size=a.bs,
          learning_rate=5e-4, logging_steps=2, save_steps=a.save_steps, save_strategy="steps",
          report_to="none", use_cpu=True, ddp_backend="gloo" if world > 1 else None, ddp_timeout=30,
          dataloader_num_workers=a.workers, seed=0, train_sampling_strategy="sequential",
          gradient_checkpointing=a.grad_ckpt, disable_tqdm=False)
if a.fault == "removed-arg":
    kw["evaluation_strategy"] = "steps"      # pre-4.46 spelling kept in an old launch script
    kw["eval_steps"] = 10
elif a.fault == "best-model-mismatch":
    kw.update(load_best_model_at_end=True, eval_strategy="epoch", metric_for_best_model="eval_loss")
elif a.fault in ("none", "metrics-tuple"):
    kw.update(eval_strategy="steps", eval_steps=10)
if a.fault == "gc-reentrant-ddp":
    kw.update(gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
              ddp_find_unused_parameters=True)
if a.fault == "unused-head":
    kw.update(ddp_find_unused_parameters=False)
    model.value_head = torch.nn.Linear(64, 1)   # reward head kept from the RLHF variant, unused in SFT
if a.fault == "grad-ckpt-cache":
    kw.update(gradient_checkpointing=True)
    model.config.use_cache = True

args = TrainingArguments(**kw)

def compute_metrics(ev):
    preds, labels = ev.predictions, ev.label_ids
    preds = preds.argmax(-1)[:, :-1]
    labels = labels[:, 1:]
    m = labels != -100
    return {"accuracy": float((preds[m] == labels[m]).mean())}

class Speed(TrainerCallback):
    def on_log(self, args_, state, control, logs=None, **k):
        if state.is_world_process_zero and logs and "loss" in logs:
            log.info("step %d: loss=%.4f ppl=%.1f", state.global_step, logs["loss"], math.exp(min(logs["loss"], 20)))

class MidTrainEval(TrainerCallback):
    """Quick sanity eval on the main process only (saves time on the other ranks)."""
    def on_step_end(self, args_, state, control, **k):
        if state.global_step == a.step and state.is_world_process_zero:
            log.info("running mid-train eval at step %d", state.global_step)
            print(trainer.evaluate(eval_ds), flush=True)

trainer = Trainer(model=model, args=args, train_dataset=train_ds,
                  eval_dataset=eval_ds if a.fault in ("none", "eval-rank0-only", "metrics-tuple", "best-model-mismatch", "eval-oom") else None,
                  data_collator=collator, processing_class=tok,
                  compute_metrics=compute_metrics if a.fault in ("metrics-tuple", "eval-oom") else None,
                  callbacks=[Speed()] + ([MidTrainEval()] if a.fault == "eval-rank0-only" else []))
log.info("train samples=%d eval samples=%d world=%d", len(train_ds), len(eval_ds), world)
res = trainer.train()
log.info("train done: %s", res.metrics)
if a.fault == "eval-oom" or a.fault == "metrics-tuple" or a.fault == "none":
    print(trainer.evaluate())
trainer.save_model(a.out + "/final")
print("saved to", a.out + "/final")
