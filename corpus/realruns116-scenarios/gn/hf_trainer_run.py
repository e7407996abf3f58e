# Family: Hugging Face Trainer runs (classification / causal LM), tiny models, offline.
# --fault selects a misconfiguration or bug; --bad-rank restricts data bugs to one rank.
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hfcommon import build_tokenizer, make_cls_dataset, make_texts, tiny_gpt2, tiny_bert_cls

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--task", default="cls", choices=["cls", "clm"])
p.add_argument("--outdir", default="out")
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--epochs", type=float, default=2)
p.add_argument("--nsamples", type=int, default=64)
p.add_argument("--resume-from", default=None)
p.add_argument("--save-steps", type=int, default=0)
p.add_argument("--save-limit", type=int, default=0)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--pg-timeout", type=int, default=40)
p.add_argument("--warn-noise", action="store_true")
p.add_argument("--map-procs", type=int, default=1)
a = p.parse_args()

if a.use_logging:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
log = logging.getLogger("train_cls")

import torch
import transformers
from datetime import timedelta
from transformers import (Trainer, TrainingArguments, DataCollatorWithPadding, default_data_collator,
                          DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel)

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
if a.use_logging:
    transformers.utils.logging.set_verbosity_info() if rank == 0 else transformers.utils.logging.set_verbosity_warning()
    transformers.utils.logging.enable_default_handler(); transformers.utils.logging.enable_explicit_format()
torch.manual_seed(0)

bad_here = a.bad_rank < 0 or a.bad_rank == rank
f = a.fault

tok = build_tokenizer(pad=not (f == "no_pad_token" and bad_here), mask=False,
                      extra_tokens=24 if f == "added_tokens_no_resize" else 0,
                      model_max_length=64 if f == "no_truncation_long" else 48)

num_labels = 2
raw = make_cls_dataset(a.nsamples, seed=1 + rank,
                       max_len=120 if (f == "no_truncation_long" and bad_here) else 14)
if f == "label_out_of_range" and bad_here:
    # labels come from a 3-star rating column but model built with num_labels=2
    raw = raw.map(lambda ex, i: {"label": i % 3}, with_indices=True)
if f == "added_tokens_no_resize" and bad_here:
    raw = raw.map(lambda ex, i: {"text": ex["text"] + (f" <extra_{i % 24}>" if i % 5 == 4 else "")}, with_indices=True)
split = raw.train_test_split(test_size=0.25, seed=0)

trunc = f not in ("no_truncation_long", "unpadded_default_collator")


def tok_fn(batch):
    if f == "no_pad_token" and bad_here:
        return tok(batch["text"], padding="max_length", truncation=True, max_length=24)
    return tok(batch["text"], truncation=trunc, max_length=None if not trunc else 48)


if a.warn_noise:
    # length check on the raw corpus (untruncated) before the real preprocessing
    lens = [len(x) for x in tok([" ".join(make_texts(1, 99, 60, 60)) * 2] + raw["text"][:8])["input_ids"]]
    print(f"[rank{rank}] longest raw doc: {max(lens)} tokens")
cols = ["text"] if f != "keep_text_column" else []
np_ = a.map_procs if a.map_procs > 1 else None
train = split["train"].map(tok_fn, batched=True, remove_columns=cols, num_proc=np_, batch_size=8)
evals = split["test"].map(tok_fn, batched=True, remove_columns=cols, num_proc=np_, batch_size=8)

if a.task == "clm":
    def add_labels(ex):
        ex["labels"] = list(ex["input_ids"])
        return ex
    if f in ("clm_with_padding_collator", "clm_label_column_name"):
        train = train.map(add_labels, remove_columns=["label"])
        evals = evals.map(add_labels, remove_columns=["label"])
    else:  # DataCollatorForLanguageModeling builds the labels
        train = train.remove_columns(["label"]); evals = evals.remove_columns(["label"])
    if f == "clm_label_column_name":
        train = train.rename_column("labels", "label_ids_lm"); evals = evals.rename_column("labels", "label_ids_lm")
    model = tiny_gpt2(len(tok) if f != "added_tokens_no_resize" else 3 + 1 + 62, n_positions=64)
    model.config.pad_token_id = tok.pad_token_id
else:
    vocab = len(tok) if f != "added_tokens_no_resize" else (len(tok) - 24)
    if a.warn_noise:
        # start from a locally "pre-trained" encoder saved earlier (head newly initialised)
        from transformers import BertModel, BertForSequenceClassification
        base_dir = os.path.join(a.outdir, "base_encoder")
        if rank == 0 and not os.path.isdir(base_dir):
            tiny_bert_cls(vocab, num_labels=num_labels).bert.save_pretrained(base_dir)
        if world > 1:
            torch.distributed.barrier()
        model = BertForSequenceClassification.from_pretrained(base_dir, num_labels=num_labels)
    else:
        model = tiny_bert_cls(vocab, num_labels=num_labels, hidden=a.n_embd, layers=a.n_layer)

if f == "unpadded_default_collator" or f == "keep_text_column":
    collator = default_data_collator if f == "unpadded_default_collator" else DataCollatorWithPadding(tok)
elif f in ("clm_with_padding_collator", "clm_label_column_name"):
    collator = DataCollatorWithPadding(tok)
elif a.task == "clm":
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
elif f == "mlm_collator_no_mask":
    collator = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=0.15)
else:
    collator = DataCollatorWithPadding(tok)


def compute_metrics(ev):
    logits, labels = ev.predictions, ev.label_ids
    import numpy as np
    if f == "metrics_bug" and bad_here:
        # bug: for models returning (logits, hidden) predictions is a tuple
        preds = logits.argmax(-1)
    else:
        preds = np.argmax(logits[0] if isinstance(logits, tuple) else logits, axis=-1)
    acc = float((preds == labels).mean())
    from sklearn.metrics import f1_score
    return {"accuracy": acc, "f1": f1_score(labels, preds) if a.warn_noise else f1_score(labels, preds, zero_division=0)}


if f == "metrics_bug":
    model.config.output_hidden_states = True

targs = dict(output_dir=a.outdir, per_device_train_batch_size=8, per_device_eval_batch_size=8,
             num_train_epochs=a.epochs, learning_rate=5e-4, logging_steps=2, report_to=[],
             eval_strategy="epoch", save_strategy="no", use_cpu=True, dataloader_num_workers=0,
             disable_tqdm=False, seed=0)
if a.save_steps:
    targs.update(save_strategy="steps", save_steps=a.save_steps)
if a.save_limit:
    targs.update(save_total_limit=a.save_limit)
if f == "remove_cols_custom_forward":
    pass
if f == "best_model_mismatch":
    targs.update(load_best_model_at_end=True, eval_strategy="epoch", save_strategy="steps", save_steps=3,
                 metric_for_best_model="accuracy")
if f == "report_to_tensorboard":
    targs.update(report_to=["tensorboard"])
if f == "keep_text_column":
    targs.update(remove_unused_columns=False)
if f == "old_eval_arg":
    # config carried over from a transformers 4.x recipe
    targs.pop("eval_strategy"); targs["evaluation_strategy"] = "epoch"
args = TrainingArguments(**targs)

if f == "remove_cols_custom_forward":
    # wrapper model with a **kwargs forward: Trainer's signature inspection finds no usable columns
    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__(); self.inner = inner; self.config = inner.config
        def forward(self, **batch):
            return self.inner(**batch)
    model = Wrapped(model)

trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=evals,
                  data_collator=collator, processing_class=tok,
                  compute_metrics=compute_metrics if a.task == "cls" else None)
log.info("Starting training: %d train / %d eval examples, world=%d", len(train), len(evals), world)
trainer.train(resume_from_checkpoint=a.resume_from)
m = trainer.evaluate()
if rank == 0:
    print("final eval:", {k: round(v, 4) if isinstance(v, float) else v for k, v in m.items()})
if f == "final_save" or a.save_steps:
    trainer.save_model(os.path.join(a.outdir, "final"))
if world > 1:
    torch.distributed.destroy_process_group()
