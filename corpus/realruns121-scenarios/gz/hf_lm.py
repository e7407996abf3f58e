"""Tiny GPT-2 causal LM fine-tune with the Hugging Face Trainer, fully offline.

A word-level tokenizer is built locally from a toy corpus; the model is built from a GPT2Config.
--case selects a configuration: ok | nopad | bestmodel | vocab | wandb | chat
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--case", default="ok")
p.add_argument("--out", default="work/hf_out")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--model-vocab", type=int, default=0)
p.add_argument("--report", default="none")
args = p.parse_args()

WORDS = ("the a model loss step gradient rank node batch token layer train eval save load shard "
         "cluster queue epoch warmup decay optimizer scheduler checkpoint metric value").split()


def corpus(n, seed=0):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(6, 30))) for _ in range(n)]


def build_tokenizer(texts, with_pad=True):
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["[UNK]", "<|endoftext|>"] + (["[PAD]"] if with_pad else [])
    tr = trainers.WordLevelTrainer(special_tokens=special)
    tok.train_from_iterator(texts, tr)
    # extend with numbers/ids seen in production logs
    tok.add_tokens([f"id{i}" for i in range(200)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>")
    if with_pad:
        fast.pad_token = "[PAD]"
    return fast


def main():
    texts = corpus(400)
    texts = [t + " " + " ".join(f"id{random.Random(i).randint(0, 199)}" for _ in range(3)) for i, t in enumerate(texts)]
    tok = build_tokenizer(texts, with_pad=(args.case != "nopad"))
    print(f"tokenizer vocab size: {len(tok)}", flush=True)
    vocab = args.model_vocab or len(tok)
    cfg = GPT2Config(vocab_size=vocab, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    print(f"model parameters: {sum(p.numel() for p in model.parameters())/1e6:.2f}M (vocab {vocab})", flush=True)

    if args.case == "chat":
        msgs = [{"role": "system", "content": "you are a helpful assistant"},
                {"role": "user", "content": "the model loss step"}]
        texts = [tok.apply_chat_template(msgs + [{"role": "assistant", "content": t}], tokenize=False) for t in texts]

    ds = Dataset.from_dict({"text": texts})

    def tok_fn(batch):
        return tok(batch["text"], truncation=True, max_length=48, padding="max_length" if args.case == "nopad" else False)

    ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
    split = ds.train_test_split(test_size=0.1, seed=0)
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

    kw = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
              max_steps=args.max_steps, learning_rate=5e-4, warmup_steps=5, logging_steps=10,
              save_steps=20, eval_strategy="steps", eval_steps=20, report_to=args.report,
              use_cpu=True, dataloader_num_workers=0, seed=0, save_total_limit=1)
    if args.case == "bestmodel":
        kw.update(eval_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="eval_loss")
    targs = TrainingArguments(**kw)
    trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                      data_collator=collator, processing_class=tok)
    res = trainer.train()
    print(res, flush=True)
    print(trainer.evaluate(), flush=True)


if __name__ == "__main__":
    main()
