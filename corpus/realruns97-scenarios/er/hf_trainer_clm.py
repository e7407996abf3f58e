"""Causal-LM fine-tuning of a tiny GPT-2 with the HF Trainer (single process or torchrun DDP on CPU/gloo).
--fault selects a real bug / misconfiguration:
  none            healthy run (gradient checkpointing + long-sample tokenizer warnings)
  chat_tokens     add chat special tokens to the tokenizer but forget resize_token_embeddings
  nopad           tokenizer saved without a pad token, padding="max_length" in the map
  best_mismatch   load_best_model_at_end with eval per epoch but save per steps
  slow            healthy but each step sleeps (used for interrupt / kill experiments)
Resume: --resume-from DIR (with possibly changed --n-embd / --freeze-embeddings).
"""
import argparse, os, sys, time, warnings

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--output-dir", default="/work/rr97/er/runs/clm")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--save-steps", type=int, default=20)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--resume-from", default=None)
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--ddp-find-unused", action="store_true")
p.add_argument("--n-train", type=int, default=400)
p.add_argument("--ddp-backend", default=None)
args = p.parse_args()

import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          TrainerCallback, set_seed)
sys.path.insert(0, os.path.dirname(__file__))
import common

set_seed(42)
tok = common.build_tokenizer(with_pad=(args.fault != "nopad"))
if args.fault == "chat_tokens":
    # new chat markers for the instruction format
    n_added = tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>", "<|end|>"]})
    print(f"added {n_added} special tokens, tokenizer size is now {len(tok)}")

texts = common.make_texts(args.n_train, seed=1, max_len=30 if args.fault == "none" else 18)
if args.fault == "none":
    # a few long reviews: the tokenizer warns before truncation kicks in the map below
    texts[:3] = [" ".join(common.WORDS) * 2] * 3
if args.fault == "chat_tokens":
    texts = [f"<|user|> {t} <|assistant|> {t[::-1][:0]}ok <|end|>" for t in texts]
raw = Dataset.from_dict({"text": texts})
split = raw.train_test_split(test_size=0.1, seed=0)

# the model was built for the original 55-token vocabulary
model = common.tiny_gpt2(vocab_size=55, n_embd=args.n_embd)
if args.freeze_embeddings:
    for prm in model.transformer.wte.parameters():
        prm.requires_grad = False
    print("froze input embeddings")


if args.fault == "rank0_resize" and int(os.environ.get("RANK", "0")) == 0:
    # add a separator token for the prompt format (done in the main-process-only preprocessing block)
    tok.add_tokens(["<sep>"])
    model.resize_token_embeddings(len(tok), pad_to_multiple_of=8)
    print(f"resized embeddings to {model.get_input_embeddings().weight.shape[0]}")


def tokenize(batch):
    if args.fault == "none":
        enc = tok(batch["text"])  # no truncation here -> tokenizer warning
        enc = {k: [v[:48] for v in vs] for k, vs in enc.items()}
        return enc
    if args.fault == "nopad":
        return tok(batch["text"], padding="max_length", truncation=True, max_length=32)
    return tok(batch["text"], truncation=True, max_length=48)


tokenized = split.map(tokenize, batched=True, remove_columns=["text"], desc="Tokenizing")
collator = DataCollatorForLanguageModeling(tok, mlm=False)


class Sleepy(TrainerCallback):
    def on_step_end(self, a, state, control, **kw):
        if args.step_sleep:
            time.sleep(args.step_sleep)


ta = dict(output_dir=args.output_dir, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=args.max_steps, learning_rate=5e-4, logging_steps=5, save_steps=args.save_steps,
          eval_steps=args.save_steps, eval_strategy="steps", save_strategy="steps",
          gradient_accumulation_steps=args.grad_accum,
          report_to="none", use_cpu=True, dataloader_num_workers=0, seed=42,
          ddp_backend=args.ddp_backend, ddp_timeout=60, save_total_limit=3)
if args.fault == "none":
    ta.update(gradient_checkpointing=True, warmup_steps=5)
if args.ddp_find_unused:
    ta.update(ddp_find_unused_parameters=True)
if args.fault == "best_mismatch":
    ta.update(load_best_model_at_end=True, metric_for_best_model="eval_loss",
              eval_strategy="epoch", save_strategy="steps")
targs = TrainingArguments(**ta)

trainer = Trainer(model=model, args=targs, train_dataset=tokenized["train"],
                  eval_dataset=tokenized["test"], data_collator=collator,
                  processing_class=tok, callbacks=[Sleepy()])
result = trainer.train(resume_from_checkpoint=args.resume_from)
print(result)
if args.fault == "eval_rank0" and not trainer.is_world_process_zero():
    trainer.save_model(os.path.join(args.output_dir, "final"))
    print("rank", os.environ.get("RANK"), "done")
    sys.exit(0)
metrics = trainer.evaluate()
print({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()})
trainer.save_model(os.path.join(args.output_dir, "final"))
print("saved final model to", os.path.join(args.output_dir, "final"))
