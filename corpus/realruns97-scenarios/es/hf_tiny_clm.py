"""Tiny causal-LM fine-tune with HF Trainer under torchrun/accelerate (gloo, CPU, fully offline).

The tokenizer is a WordLevel tokenizer built from a local corpus; the model is GPT2 from a config.
--fault no-pad : tokenizer saved without a pad token (pad_token = eos line dropped in a refactor)
"""
import argparse
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorWithPadding, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr97/es/work/hf_out")
p.add_argument("--max-steps", type=int, default=12)
args = p.parse_args()

words = ("the model reads a shard of tokens and the loss goes down while the ranks all reduce "
         "gradients over gloo on a small cpu box with two cores").split()
vocab = {"[UNK]": 0, "<|endoftext|>": 1}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>")
if args.fault != "no-pad":
    tok.pad_token = tok.eos_token

g = torch.Generator().manual_seed(0)
texts = [" ".join(words[i] for i in torch.randint(0, len(words), (int(torch.randint(4, 20, (1,), generator=g)),), generator=g))
         for _ in range(256)]
ds = Dataset.from_dict({"text": texts})


def enc(b):
    out = tok(b["text"], truncation=True, max_length=24)
    out["labels"] = [list(x) for x in out["input_ids"]]
    return out


ds = ds.map(enc, batched=True, remove_columns=["text"])

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=32,
                 bos_token_id=1, eos_token_id=1)
model = GPT2LMHeadModel(cfg)


class PadLabels(DataCollatorWithPadding):
    def __call__(self, feats):
        labels = [f.pop("labels") for f in feats]
        batch = super().__call__(feats)
        L = batch["input_ids"].shape[1]
        batch["labels"] = torch.tensor([l + [-100] * (L - len(l)) for l in labels])
        return batch


targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.max_steps,
                          logging_steps=2, learning_rate=5e-4, report_to="none", save_strategy="no",
                          use_cpu=True, ddp_backend="gloo", dataloader_num_workers=0, disable_tqdm=False)
trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=PadLabels(tok))
trainer.train()
if trainer.is_world_process_zero():
    print("final loss", trainer.state.log_history[-1])
