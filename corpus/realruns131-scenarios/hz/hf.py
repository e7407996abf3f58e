"""Tiny GPT-2 causal-LM fine-tune with the Hugging Face Trainer, everything local.

  --config FILE      YAML with a `training:` section passed to TrainingArguments and
                     optional `lora:` / `data:` / `model:` sections
  --legacy-optim     build the optimizer with transformers.AdamW (old recipe)
"""
import argparse
import json
import os
import random
import sys

import torch
import yaml
from datasets import Dataset, load_dataset
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          Trainer, TrainingArguments)

VOCAB = 256


class ByteCollator:
    def __call__(self, feats):
        ids = torch.tensor([f["input_ids"] for f in feats])
        return {"input_ids": ids, "labels": ids.clone(), "attention_mask": torch.ones_like(ids)}


def make_corpus(path, n=256, seqlen=32):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rnd = random.Random(0)
    with open(path, "w") as f:
        for _ in range(n):
            start = rnd.randrange(VOCAB - seqlen)
            f.write(json.dumps({"input_ids": list(range(start, start + seqlen))}) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--legacy-optim", action="store_true")
    args = p.parse_args()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)

    data_cfg = cfg.get("data", {})
    make_corpus("data/hf/train.jsonl")
    train = load_dataset("json", data_files=data_cfg.get("train_file", "data/hf/train.jsonl"), split="train")
    print(f"train examples: {len(train)}", flush=True)

    mcfg = cfg.get("model", {})
    if "pretrained_dir" in mcfg:
        model = GPT2LMHeadModel.from_pretrained(mcfg["pretrained_dir"])
    else:
        model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_layer=2, n_head=2, n_embd=64,
                                           bos_token_id=0, eos_token_id=0))
    if mcfg.get("export_dir"):
        model.save_pretrained(mcfg["export_dir"])
        print(f"exported initial weights to {mcfg['export_dir']}", flush=True)

    if "lora" in cfg:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(**cfg["lora"]))
        model.print_trainable_parameters()

    targs = TrainingArguments(**cfg["training"])
    optimizers = (None, None)
    if args.legacy_optim:
        from transformers import AdamW
        optimizers = (AdamW(model.parameters(), lr=targs.learning_rate), None)
    trainer = Trainer(model=model, args=targs, train_dataset=train, data_collator=ByteCollator(),
                      optimizers=optimizers)
    trainer.train()
    trainer.save_model(os.path.join(targs.output_dir, "final"))
    print("saved final model", flush=True)


if __name__ == "__main__":
    main()
