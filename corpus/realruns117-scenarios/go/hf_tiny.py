"""Fine-tune a tiny GPT-2 (built from config, tokenizer built locally) with the HF Trainer.

--variant: ok | best-ckpt (load_best_model_at_end with eval every N steps, save per epoch)
           | pad (dynamic padding collator with a tokenizer that has no pad token)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

p = argparse.ArgumentParser()
p.add_argument("--variant", default="ok")
p.add_argument("--out", default="hf_out")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--jsonlog", action="store_true")
a = p.parse_args()

if a.jsonlog:
    import jlog
    jlog.setup("jsonlogger", "hf")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import (DataCollatorWithPadding, GPT2Config, GPT2LMHeadModel,  # noqa: E402
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)
from transformers.utils import logging as hf_logging  # noqa: E402

hf_logging.set_verbosity_info() if a.variant == "ok" else hf_logging.set_verbosity_warning()

words = ("the model learns a small language from text data on cpu with gloo and the loss goes down "
         "slowly but surely until the run ends or breaks").split()
vocab = {"<unk>": 0, "<eos>": 1}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>")
if a.variant != "pad":
    tok.pad_token = tok.eos_token

import random  # noqa: E402
rnd = random.Random(0)
texts = [" ".join(rnd.choice(words) for _ in range(rnd.randrange(4, 14))) for _ in range(96)]
ds = Dataset.from_dict({"text": texts})


def enc(b):
    out = tok(b["text"], truncation=True, max_length=32)
    out["labels"] = [list(x) for x in out["input_ids"]]
    return out


ds = ds.map(enc, batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.25, seed=0)

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=len(vocab), n_positions=64,
                 bos_token_id=1, eos_token_id=1, pad_token_id=tok.pad_token_id)
model = GPT2LMHeadModel(cfg)


class PadLabels(DataCollatorWithPadding):
    def __call__(self, feats):
        labels = [f.pop("labels") for f in feats]
        batch = super().__call__(feats)
        n = batch["input_ids"].shape[1]
        batch["labels"] = torch.tensor([l + [-100] * (n - len(l)) for l in labels])
        return batch


kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=a.steps, logging_steps=2, learning_rate=5e-4, report_to=[], use_cpu=True,
          save_strategy="no", eval_strategy="no", dataloader_num_workers=0)
if a.variant == "best-ckpt":
    kw.update(eval_strategy="steps", eval_steps=4, save_strategy="epoch", load_best_model_at_end=True,
              metric_for_best_model="eval_loss")
if a.variant == "ok":
    kw.update(eval_strategy="steps", eval_steps=6)
args = TrainingArguments(**kw)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=PadLabels(tok))
trainer.train()
print(trainer.evaluate())
