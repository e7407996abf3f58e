"""Tiny GPT-2 trained with the Hugging Face Trainer on a locally built word-level corpus.

Healthy runs with long evaluation / checkpoint pauses, or a stuck callback (--fault).
"""
import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainerCallback,
                          TrainingArguments, DataCollatorForLanguageModeling)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "slow-eval"])
p.add_argument("--steps", type=int, default=120)
p.add_argument("--eval-steps", type=int, default=40)
p.add_argument("--outdir", default="/tmp/hc_out/hf")
p.add_argument("--eval-delay", type=float, default=0.0, help="extra seconds per eval batch (slow metric)")
args = p.parse_args()

words = ("the model learns to predict the next token from a small corpus of short sentences about "
         "training loops data loaders checkpoints and evaluation runs on a cpu machine").split()
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

g = torch.Generator().manual_seed(0)
lines = [" ".join(words[j] for j in torch.randint(0, len(words), (24,), generator=g).tolist()) for _ in range(600)]


class DS(torch.utils.data.Dataset):
    def __init__(self, texts):
        self.enc = [tokenizer(t, truncation=True, max_length=32)["input_ids"] for t in texts]

    def __len__(self):
        return len(self.enc)

    def __getitem__(self, i):
        return {"input_ids": self.enc[i]}


train_ds, eval_ds = DS(lines[:500]), DS(lines[500:])
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)


class SlowEval(TrainerCallback):
    def on_prediction_step(self, a, state, control, **kw):
        if args.eval_delay:
            time.sleep(args.eval_delay)  # metric computed on a slow remote service


targs = TrainingArguments(
    output_dir=args.outdir, max_steps=args.steps, per_device_train_batch_size=16, per_device_eval_batch_size=4,
    eval_strategy="steps", eval_steps=args.eval_steps, save_strategy="steps", save_steps=args.eval_steps,
    logging_steps=10, learning_rate=5e-4, report_to=[], use_cpu=True, dataloader_num_workers=0,
    disable_tqdm=False, seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
                  callbacks=[SlowEval()])
trainer.train()
print(trainer.evaluate())
