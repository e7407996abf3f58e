"""Fine-tune a tiny GPT-2 sequence classifier with the HF Trainer.

--fault selects a misconfiguration / bug:
  none            healthy run (with the usual warnings)
  strategy        load_best_model_at_end with mismatched eval/save strategies
  removed-arg     passes the removed `evaluation_strategy` argument
  no-pad          tokenizer without pad token, DataCollatorWithPadding
  metrics         compute_metrics assumes predictions is an array (model returns hidden states too)
  float-labels    labels stored as floats -> problem_type inferred as multi-label
  collate-float   hand-written collator builds input_ids as float tensors
  tied-custom     custom nn.Module with tied weights saved by the Trainer (safetensors)
"""
import argparse
import logging
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from datasets import Dataset
from transformers import (DataCollatorWithPadding, GPT2Config, GPT2ForSequenceClassification,
                          Trainer, TrainingArguments)
from transformers.modeling_outputs import SequenceClassifierOutput

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr79/cg/tmp/hf_cls")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--eval-steps", type=int, default=20)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
log = logging.getLogger("finetune_cls")
torch.manual_seed(0)

tok = build_tokenizer(with_pad=args.fault != "no-pad")
texts, labels = make_corpus(320)
if args.fault == "float-labels":
    labels = [float(y) for y in labels]   # came out of a pandas column as float64
ds = Dataset.from_dict({"text": texts, "label": labels})


def tokenize(batch):
    return tok(batch["text"], truncation=True, max_length=32)


ds = ds.map(tokenize, batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.2, seed=0)
train_ds, eval_ds = split["train"], split["test"]
log.info("train examples: %d, eval examples: %d", len(train_ds), len(eval_ds))

cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2, num_labels=2,
                 pad_token_id=tok.pad_token_id)
if args.fault == "metrics":
    cfg.output_hidden_states = True


class TiedClassifier(nn.Module):
    """Small hand-written model: embedding tied to an auxiliary LM head."""

    def __init__(self, vocab, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 2, 128, batch_first=True), 2)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.emb.weight
        self.cls = nn.Linear(dim, 2)

    def forward(self, input_ids, attention_mask=None, labels=None):
        h = self.enc(self.emb(input_ids), src_key_padding_mask=(attention_mask == 0) if attention_mask is not None else None)
        logits = self.cls(h.mean(1))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


if args.fault == "tied-custom":
    model = TiedClassifier(len(tok))
else:
    model = GPT2ForSequenceClassification(cfg)
log.info("model parameters: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)


def compute_metrics(eval_pred):
    preds = eval_pred.predictions.argmax(-1)
    return {"accuracy": float((preds == eval_pred.label_ids).mean())}


def float_collate(features):
    # pad by hand with a numpy array (defaults to float64)
    L = max(len(f["input_ids"]) for f in features)
    ids = np.zeros((len(features), L))
    mask = np.zeros((len(features), L))
    for i, f in enumerate(features):
        ids[i, :len(f["input_ids"])] = f["input_ids"]
        mask[i, :len(f["input_ids"])] = 1
    return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask).long(),
            "labels": torch.tensor([f["label"] for f in features])}


ta = dict(output_dir=args.out, per_device_train_batch_size=16, per_device_eval_batch_size=32,
          learning_rate=5e-4, max_steps=args.max_steps, logging_steps=5, eval_strategy="steps",
          eval_steps=args.eval_steps, save_strategy="steps", save_steps=args.eval_steps,
          report_to="none", use_cpu=True, dataloader_num_workers=0, seed=0, ddp_timeout=60)
if args.fault == "strategy":
    ta.update(load_best_model_at_end=True, metric_for_best_model="accuracy", save_strategy="epoch")
if args.fault == "removed-arg":
    ta.pop("eval_strategy")
    ta["evaluation_strategy"] = "steps"
training_args = TrainingArguments(**ta)

collator = float_collate if args.fault == "collate-float" else DataCollatorWithPadding(tok)
trainer = Trainer(model=model, args=training_args, train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=collator, compute_metrics=compute_metrics)
result = trainer.train()
log.info("train result: %s", result.metrics)
metrics = trainer.evaluate()
log.info("final eval: %s", metrics)
trainer.save_model(os.path.join(args.out, "final"))
log.info("done")
