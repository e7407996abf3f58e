"""Tiny HF Trainer fine-tuning runs (GPT-2 / BERT / T5 built from configs). --fault selects the mistake."""
import argparse, os, sys, logging
import torch
from datasets import Dataset
import transformers
from transformers import (BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel,
                          T5Config, T5ForConditionalGeneration, Trainer, TrainingArguments,
                          DataCollatorWithPadding, DataCollatorForLanguageModeling, DataCollatorForSeq2Seq)
import common

p = argparse.ArgumentParser()
p.add_argument("--model", default="bert", choices=["bert", "gpt2", "t5"])
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/tmp/rr65ar_out")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--num-samples", type=int, default=256)
p.add_argument("--max-length", type=int, default=16)
p.add_argument("--num-labels", type=int, default=3)
p.add_argument("--vocab", type=int, default=64)
p.add_argument("--resume", default=None)
p.add_argument("--save-steps", type=int, default=0)
p.add_argument("--log-level", default="warning")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

if args.log_level == "info":
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    transformers.utils.logging.set_verbosity_info()

rank = int(os.environ.get("RANK", 0))
tok = common.build_tokenizer(with_pad=(args.fault != "no-pad"))
texts = common.sentences(args.num_samples, seed=1)
labels = [len(t.split()) % (4 if args.fault == "labels-oob" else args.num_labels) for t in texts]
if args.fault == "labels-float":
    labels = [float(l) for l in labels]

if args.model == "bert":
    cfg = BertConfig(vocab_size=args.vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, num_labels=args.num_labels,
                     pad_token_id=tok.pad_token_id or 0)
    model = BertForSequenceClassification(cfg)
    ds = Dataset.from_dict({"text": texts, "label": labels})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=args.max_length), batched=True)
    if args.fault != "extra-column":
        ds = ds.remove_columns(["text"])
    collator = DataCollatorWithPadding(tok)
elif args.model == "gpt2":
    cfg = GPT2Config(vocab_size=args.vocab, n_layer=2, n_embd=64, n_head=2,
                     n_positions=16 if args.fault == "maxlen" else 64)
    model = GPT2LMHeadModel(cfg)
    ds = Dataset.from_dict({"text": texts})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=args.max_length,
                              padding="max_length" if args.fault == "maxlen" else False),
                batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
else:
    cfg = T5Config(vocab_size=args.vocab, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                   pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=None if args.fault == "t5-no-start" else tok.pad_token_id)
    model = T5ForConditionalGeneration(cfg)
    ds = Dataset.from_dict({"src": texts, "tgt": [" ".join(reversed(t.split())) for t in texts]})
    def prep(b):
        enc = tok(b["src"], truncation=True, max_length=args.max_length)
        enc["labels"] = tok(b["tgt"], truncation=True, max_length=args.max_length)["input_ids"]
        return enc
    ds = ds.map(prep, batched=True, remove_columns=["src", "tgt"])
    collator = DataCollatorForSeq2Seq(tok, model=None if args.fault == "t5-no-start" else model)

if args.fault == "filter-empty":
    # drop over-long examples (comparison written the wrong way round)
    ds = ds.filter(lambda ex: len(ex["input_ids"]) > args.max_length)
    print(f"rank {rank}: {len(ds)} training examples after length filter")
if args.fault.startswith("gc-frozen"):
    # "parameter-efficient": freeze the backbone, train only the top layer's attention output
    for n_, p_ in model.named_parameters():
        p_.requires_grad = ("layer.1.attention.output" in n_) and args.fault != "gc-frozen-all"

kw = dict(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps, learning_rate=5e-4,
          logging_steps=5, report_to="none", use_cpu=True, disable_tqdm=not args.tqdm,
          save_strategy="steps" if args.save_steps else "no", save_steps=args.save_steps or 500,
          dataloader_num_workers=0, seed=0)
if args.fault == "extra-column":
    kw["remove_unused_columns"] = False
if args.fault.startswith("gc-frozen"):
    kw["gradient_checkpointing"] = True
    kw["gradient_checkpointing_kwargs"] = {"use_reentrant": True}
if args.fault == "eval-no-dataset":
    kw["eval_strategy"] = "steps"; kw["eval_steps"] = 10
if args.fault == "fp16-cpu":
    kw["fp16"] = True
if args.fault == "bf16-cpu":
    kw["bf16"] = True
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collator)
result = trainer.train(resume_from_checkpoint=args.resume)
if rank == 0:
    print("train result:", result)
if args.fault == "save-final" or args.save_steps:
    trainer.save_model(os.path.join(args.out, "final"))
