"""Tiny GPT-2 causal LM fine-tune with the HF Trainer (offline, local tokenizer).

  --fault none_eval_cb   eval metric raises on one eval round; a user callback/guard logs it and training goes on
  --fault best_model     load_best_model_at_end with eval every N steps but save per epoch
  --fault no_pad         local tokenizer without pad token + padding collator
  --fault lora_targets   LoRA with target modules copied from a Llama recipe
"""
import argparse
import logging
import math
import os
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "0")

import numpy as np
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorForLanguageModeling, DataCollatorWithPadding, GPT2Config,
                          GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainerCallback,
                          TrainingArguments)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none_eval_cb")
p.add_argument("--out", default="hf_out")
p.add_argument("--max-steps", type=int, default=24)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("finetune")

words = ("the model reads a short line of text and learns to predict the next word in the line "
         "while the loss goes down slowly over many steps of training on cpu").split()
vocab = {w: i for i, w in enumerate(sorted(set(words)))}
vocab["[UNK]"] = len(vocab)
if args.fault != "no_pad":
    vocab["[PAD]"] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]",
                              pad_token=None if args.fault == "no_pad" else "[PAD]")

rng = np.random.default_rng(0)
texts = [" ".join(rng.choice(words, size=int(rng.integers(6, 14)))) for _ in range(160)]
ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.2, seed=0)

cfg = GPT2Config(vocab_size=len(vocab) + 1, n_layer=2, n_head=2, n_embd=64, n_positions=64,
                 bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)

if args.fault == "lora_targets":
    from peft import LoraConfig, get_peft_model
    lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    model = get_peft_model(model, lcfg)
    model.print_trainable_parameters()

eval_round = {"n": 0}


def compute_metrics(ev):
    eval_round["n"] += 1
    logits, labels = ev.predictions, ev.label_ids
    if eval_round["n"] == 2:
        # second eval: predictions come back as a tuple (logits, past_key_values) after a config change
        logits = (logits, None)
    preds = np.argmax(logits, axis=-1)
    mask = labels[:, 1:] != -100
    acc = float((preds[:, :-1][mask] == labels[:, 1:][mask]).mean())
    return {"tok_acc": acc}


def guarded_metrics(ev):
    try:
        return compute_metrics(ev)
    except Exception:
        log.error("compute_metrics failed; continuing without metrics for this evaluation\n%s",
                  traceback.format_exc())
        return {}


class LogCallback(TrainerCallback):
    def on_evaluate(self, a, state, control, metrics=None, **kw):
        if metrics is not None and "eval_tok_acc" not in metrics:
            log.warning("eval at step %d produced no tok_acc (metric error above); keeping the run alive",
                        state.global_step)


targs = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
             max_steps=args.max_steps, learning_rate=5e-4, logging_steps=4, report_to=[],
             use_cpu=True, dataloader_num_workers=0, logging_nan_inf_filter=False, save_strategy="no",
             eval_strategy="steps", eval_steps=8)
if args.fault == "best_model":
    targs.update(save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="eval_loss")

training_args = TrainingArguments(**targs)

if args.fault == "no_pad":
    collator = DataCollatorWithPadding(tok)
else:
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

trainer = Trainer(model=model, args=training_args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=collator, compute_metrics=guarded_metrics, callbacks=[LogCallback()])
res = trainer.train()
log.info("train done: %s", res.metrics)
m = trainer.evaluate()
log.info("final eval: %s (ppl %.2f)", m, math.exp(m["eval_loss"]))
