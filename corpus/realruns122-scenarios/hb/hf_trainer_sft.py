"""Tiny GPT-2 supervised fine-tuning with the Hugging Face Trainer (CPU, gloo under torchrun).

Everything is built locally: a word-level tokenizer over a synthetic instruction corpus and a
2-layer GPT2 from a config.  Flags:
  --lr                  learning rate
  --max-len             truncation length of prompt+answer (answers are at the END, so prompts
                        longer than max-len leave no supervised token: every label is -100)
  --long-prompts        fraction of samples with very long prompts (pasted documents)
  --group-by-length     TrainingArguments.group_by_length
  --nan-filter 0|1      TrainingArguments.logging_nan_inf_filter
  --max-grad-norm       TrainingArguments.max_grad_norm (0 disables clipping)
"""
import argparse
import os
import random
import warnings

import torch
from datasets import Dataset
from transformers import (DataCollatorForSeq2Seq, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments)
from tokenizers import Tokenizer, models, pre_tokenizers

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--max-len", type=int, default=96)
p.add_argument("--long-prompts", type=float, default=0.0)
p.add_argument("--group-by-length", action="store_true")
p.add_argument("--nan-filter", type=int, default=1)
p.add_argument("--max-grad-norm", type=float, default=1.0)
p.add_argument("--steps", type=int, default=120)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--outdir", default="/tmp/hb_sft_out")
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--scheduler", default="linear")
p.add_argument("--seed", type=int, default=42)
p.add_argument("--n-samples", type=int, default=2000)
args = p.parse_args()
torch.set_num_threads(1)

random.seed(0)
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sum", "of", "the", "is", "what", "and", "list", "sort",
         "reverse", "count", "words", "numbers", "answer", "question", "please"] + [str(i) for i in range(50)]
vocab = {"[PAD]": 0, "[UNK]": 1, "<|endoftext|>": 2, "###": 3}
for w in WORDS:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", eos_token="<|endoftext|>",
                              unk_token="[UNK]")


def make_example(i):
    nums = [random.randint(0, 20) for _ in range(random.randint(2, 5))]
    task = random.choice(["sum", "sort", "reverse", "count"])
    prompt = "question : please {} the numbers {} ###".format(task, " ".join(map(str, nums)))
    if random.random() < args.long_prompts:
        # a pasted document in front of the instruction
        prompt = " ".join(random.choice(WORDS) for _ in range(random.randint(120, 200))) + " " + prompt
    if task == "sum":
        ans = [str(min(sum(nums), 49))]
    elif task == "sort":
        ans = [str(x) for x in sorted(nums)]
    elif task == "reverse":
        ans = [str(x) for x in nums[::-1]]
    else:
        ans = [str(len(nums))]
    return {"prompt": prompt.replace(":", "").replace("  ", " "), "answer": "answer " + " ".join(ans)}


def tokenize(ex):
    p_ids = tok(ex["prompt"])["input_ids"]
    a_ids = tok(ex["answer"])["input_ids"] + [tok.eos_token_id]
    ids = (p_ids + a_ids)[: args.max_len]
    labels = ([-100] * len(p_ids) + a_ids)[: args.max_len]
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels}


ds = Dataset.from_list([make_example(i) for i in range(args.n_samples)]).map(tokenize,
                                                                           remove_columns=["prompt", "answer"])
cfg = GPT2Config(vocab_size=len(vocab), n_positions=256, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)

targs = TrainingArguments(
    output_dir=args.outdir, per_device_train_batch_size=args.bs, learning_rate=args.lr, max_steps=args.steps,
    logging_steps=5, save_strategy="no", report_to="none", use_cpu=True, ddp_backend="gloo",
    train_sampling_strategy="group_by_length" if args.group_by_length else "random", logging_nan_inf_filter=bool(args.nan_filter),
    max_grad_norm=args.max_grad_norm, warmup_steps=args.warmup, lr_scheduler_type=args.scheduler,
    dataloader_num_workers=0, seed=args.seed, disable_tqdm=False, ddp_timeout=60,
)
trainer = Trainer(model=model, args=targs, train_dataset=ds,
                  data_collator=DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100))
trainer.train()
