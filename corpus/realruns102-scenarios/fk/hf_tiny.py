"""Tiny causal-LM fine-tuning with HF Trainer / PEFT / TRL, everything built locally (offline).

--fault: none, strategy_mismatch, no_pad, vocab_small, peft_targets, chat_template, resume_missing
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorForLanguageModeling, DataCollatorWithPadding, GPT2Config,
                          GPT2ForSequenceClassification, GPT2LMHeadModel, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="scratch/hf-out")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--noise", action="store_true", help="grad checkpointing + length stats")
p.add_argument("--task", default="lm", choices=["lm", "cls"])
args = p.parse_args()

WORDS = ("the a cat dog sat on mat ran to park big small red blue model data train loss step "
         "epoch token learn rate batch grad norm fast slow good bad yes no sun moon tree river").split()


def build_tokenizer(with_pad=True):
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if with_pad:
        vocab["[PAD]"] = 3
    for w in WORDS:
        vocab[w] = len(vocab)
    for i in range(150):  # numbers as extra tokens
        vocab[f"n{i}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def make_texts(n=256, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(5, 20)
        out.append(" ".join(rng.choice(WORDS) if rng.random() < 0.8 else f"n{rng.randint(0, 149)}"
                            for _ in range(k)))
    return out


def main():
    tok = build_tokenizer(with_pad=args.fault != "no_pad")
    print(f"tokenizer vocab size: {len(tok)}", flush=True)
    vocab_size = len(tok)
    if args.fault == "vocab_small":
        vocab_size = 64  # copied n_vocab from the toy config, tokenizer grew since
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=1, eos_token_id=2, pad_token_id=tok.pad_token_id)
    texts = make_texts()
    if args.fault == "chat_template":
        convs = [[{"role": "user", "content": t[: len(t) // 2]}, {"role": "assistant", "content": t[len(t) // 2:]}]
                 for t in texts]
        texts = [tok.apply_chat_template(c, tokenize=False) for c in convs]
    if args.task == "cls":
        model = GPT2ForSequenceClassification(cfg)
        labels = [len(t.split()) % 2 for t in texts]
        ds = Dataset.from_dict({"text": texts, "label": labels})
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
        collator = DataCollatorWithPadding(tok)
    else:
        model = GPT2LMHeadModel(cfg)
        ds = Dataset.from_dict({"text": texts})
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
        collator = DataCollatorForLanguageModeling(tok, mlm=False)
    split = ds.train_test_split(test_size=0.1, seed=0)
    if args.noise:
        tok.model_max_length = 32
        lens = [len(tok(" ".join(texts[i:i + 4]))["input_ids"]) for i in range(0, 64, 4)]
        print(f"packed length stats: max={max(lens)} mean={sum(lens)/len(lens):.1f}", flush=True)
    print(f"model params: {model.num_parameters():,}", flush=True)

    if args.fault == "peft_targets":
        from peft import LoraConfig, get_peft_model
        lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, task_type="CAUSAL_LM",
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])  # llama-style names
        model = get_peft_model(model, lcfg)
        model.print_trainable_parameters()

    ta = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
              learning_rate=5e-4, max_steps=args.max_steps, logging_steps=5, report_to="none",
              use_cpu=True, dataloader_num_workers=0, seed=0, save_strategy="no", eval_strategy="steps",
              eval_steps=20)
    if args.noise:
        ta.update(gradient_checkpointing=True, max_grad_norm=0.3, warmup_steps=50)
    if args.fault == "strategy_mismatch":
        ta.update(save_strategy="epoch", eval_strategy="steps", eval_steps=10, load_best_model_at_end=True,
                  metric_for_best_model="eval_loss")
    if args.fault == "resume_missing":
        ta.update(save_strategy="steps", save_steps=20)
    targs = TrainingArguments(**ta)
    trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                      data_collator=collator)
    if args.fault == "resume_missing":
        # job script resumes from the last checkpoint of the previous (pre-emptied) run
        trainer.train(resume_from_checkpoint=os.path.join(args.out, "checkpoint-400"))
    else:
        trainer.train()
    metrics = trainer.evaluate()
    print("final eval:", metrics, flush=True)
    trainer.save_model(os.path.join(args.out, "final"))
    print("saved to", os.path.join(args.out, "final"), flush=True)


if __name__ == "__main__":
    main()
