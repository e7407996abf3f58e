"""HF Trainer scenarios on a tiny GPT2 / BERT classifier. Run under plain python, torchrun or accelerate.
--fault selects the misconfiguration / bug; --frank the rank it concerns; --nsteps the length."""
import argparse
import logging
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfcommon as C  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=1)
p.add_argument("--nsteps", type=int, default=40)
p.add_argument("--outdir", default="out")
p.add_argument("--resume", default=None)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pylog", action="store_true", help="python logging with timestamps")
p.add_argument("--bs", type=int, default=8)
a = p.parse_args()

if a.pylog:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)

import torch  # noqa: E402
from transformers import (Trainer, TrainingArguments, DataCollatorWithPadding, DataCollatorForLanguageModeling,  # noqa: E402
                          default_data_collator, set_seed)
import transformers  # noqa: E402

if a.pylog:
    transformers.utils.logging.set_verbosity_info()
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()

log = logging.getLogger("train")
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
set_seed(42)

targs = dict(output_dir=a.outdir, per_device_train_batch_size=a.bs, per_device_eval_batch_size=a.bs,
             max_steps=a.nsteps, logging_steps=5, save_strategy="no", report_to="none", use_cpu=True,
             learning_rate=5e-4, dataloader_num_workers=a.workers, seed=42, ddp_backend="gloo" if world > 1 else None,
             ddp_timeout=60)
collator = default_data_collator
compute_metrics = None
eval_ds = None
callbacks = []
tok = C.make_tokenizer()
model_kind = "lm"
f = a.fault

# ---------------------------------------------------------------- faults / variants
if f == "healthy-warn":
    # noisy but healthy: tokenizers parallelism used before the DataLoader workers fork, classifier restored
    # from an LM checkpoint (newly initialised head), gradient checkpointing with use_cache
    targs.update(eval_strategy="steps", eval_steps=20, gradient_checkpointing=True)
    _ = tok([" ".join(C.WORDS)] * 64)  # uses the Rust thread pool before fork
    model_kind = "lm"
elif f == "best-model-strategy":
    # load_best_model_at_end needs matching eval/save strategies
    targs.update(eval_strategy="steps", eval_steps=10, save_strategy="epoch", load_best_model_at_end=True,
                 metric_for_best_model="eval_loss")
elif f == "eval-no-dataset":
    targs.update(eval_strategy="steps", eval_steps=10)
elif f == "prep-ckpt":
    targs.update(save_strategy="steps", save_steps=a.nsteps)
elif f == "resume-bigger":
    model_kind = "lm-big"
elif f == "resume-freeze":
    model_kind = "lm-freeze"
elif f == "no-labels":
    model_kind = "lm-nolabels"
elif f == "wrong-columns":
    model_kind = "lm-rawtext"
elif f == "float-labels":
    model_kind = "cls-float"
elif f == "added-tokens":
    model_kind = "lm-added"
elif f == "rank-tokens":
    model_kind = "lm-ranktok"
elif f == "ro-output":
    targs.update(save_strategy="steps", save_steps=10)
elif f == "collator-worker":
    model_kind = "lm-unpadded"
elif f == "empty":
    model_kind = "lm-empty"
    targs.pop("max_steps")
    targs["num_train_epochs"] = 1
elif f == "bnb-optim":
    targs.update(optim="adamw_bnb_8bit")
elif f == "eval-big":
    targs.update(eval_strategy="steps", eval_steps=a.nsteps)
    model_kind = "lm-evalbig"

    def compute_metrics(ev):  # token accuracy over the whole eval set
        import numpy as np
        preds = ev.predictions.argmax(-1)
        return {"token_acc": float((preds[:, :-1] == ev.label_ids[:, 1:]).mean())}

if a.pylog and rank == 0:
    log.info("fault=%s world=%d nsteps=%d", f, world, a.nsteps)

# ---------------------------------------------------------------- data / model
train_ds = C.lm_dataset(tok, n=256)
if model_kind == "lm":
    model = C.tiny_gpt2(len(tok))
    if f == "healthy-warn":
        eval_ds = C.lm_dataset(tok, n=32, seed=1)
        collator = DataCollatorForLanguageModeling(tok, mlm=False)
elif model_kind == "lm-big":
    model = C.tiny_gpt2(len(tok), n_embd=96)  # someone changed the config between runs
elif model_kind == "lm-freeze":
    model = C.tiny_gpt2(len(tok))
    for n_, p_ in model.named_parameters():
        if "wte" in n_ or "wpe" in n_:
            p_.requires_grad_(False)  # freeze embeddings for the second phase
elif model_kind == "lm-nolabels":
    model = C.tiny_gpt2(len(tok))
    train_ds = train_ds.remove_columns(["labels"])  # relies on a collator that would build labels
elif model_kind == "lm-rawtext":
    from datasets import Dataset
    model = C.tiny_gpt2(len(tok))
    train_ds = Dataset.from_dict({"text": C.corpus(256), "source": ["synthetic"] * 256})  # forgot to tokenize
elif model_kind == "cls-float":
    model = C.tiny_cls(len(tok), num_labels=3)
    train_ds = C.cls_dataset(tok, n=256).remove_columns(["text"])
    # labels read from a CSV as floats
    train_ds = train_ds.map(lambda b: {"label": [float(x) for x in b["label"]]}, batched=True)
    from datasets import Value
    train_ds = train_ds.cast_column("label", Value("float32"))
elif model_kind == "lm-added":
    model = C.tiny_gpt2(len(tok))
    n_added = tok.add_tokens(["<user>", "<assistant>", "<sep>"])  # added after the model was built, never resized
    texts = C.corpus(256)
    texts[37] = "<user> " + texts[37] + " <assistant> ok"
    from datasets import Dataset
    train_ds = Dataset.from_dict({"text": texts}).map(
        lambda b: dict(tok(b["text"], truncation=True, max_length=24, padding="max_length"),
                       labels=tok(b["text"], truncation=True, max_length=24, padding="max_length")["input_ids"]),
        batched=True, remove_columns=["text"])
    print(f"[rank{rank}] added {n_added} tokens, len(tokenizer)={len(tok)}, model vocab={model.config.vocab_size}",
          flush=True)
elif model_kind == "lm-ranktok":
    if rank == a.frank:
        # only the process that "prepares" the tokenizer adds the special tokens
        tok.add_special_tokens({"additional_special_tokens": ["<ctx>", "<q>"]})
    model = C.tiny_gpt2(len(tok))
    print(f"[rank{rank}] vocab={len(tok)}", flush=True)
elif model_kind == "lm-unpadded":
    model = C.tiny_gpt2(len(tok))
    train_ds = C.lm_dataset(tok, n=256, pad=False)  # tokenized without padding; default collator
elif model_kind == "lm-empty":
    model = C.tiny_gpt2(len(tok))
    # keep only samples of at least 64 tokens (the corpus has none)
    train_ds = train_ds.filter(lambda ex: sum(ex["attention_mask"]) >= 64)
    print(f"[rank{rank}] train samples after length filter: {len(train_ds)}", flush=True)
elif model_kind == "lm-evalbig":
    model = C.tiny_gpt2(len(tok))
    model.resize_token_embeddings(200000)  # big vocab -> big logits kept for eval
    eval_ds = C.lm_dataset(tok, n=512, seed=1)

trainer = Trainer(model=model, args=TrainingArguments(**targs), train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=collator, compute_metrics=compute_metrics, callbacks=callbacks)

if f == "ro-output" and rank == 0:
    print(f"[rank{rank}] output_dir={os.path.abspath(a.outdir)}", flush=True)

res = trainer.train(resume_from_checkpoint=a.resume)
print(f"[rank{rank}] train done: {res.metrics}", flush=True)
if eval_ds is not None and f != "eval-big":
    print(f"[rank{rank}] eval: {trainer.evaluate()}", flush=True)
trainer.save_model(os.path.join(a.outdir, "final"))
print(f"[rank{rank}] saved to {os.path.join(a.outdir, 'final')}", flush=True)
