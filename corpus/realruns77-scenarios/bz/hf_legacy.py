"""Tiny causal-LM fine-tune written against transformers 4.x / datasets 2.x idioms.
Everything is built locally (no hub access): word-level tokenizer, GPT2Config model."""
import argparse, os, sys, math, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="/work/rr77/bz/work/hf_out")
args = p.parse_args()

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling, set_seed)
import datasets
from datasets import Dataset
if args.fault == "adamw_import":
    from transformers import AdamW, get_linear_schedule_with_warmup
set_seed(0)
corpus = [f"the {a} {b} sat on the {c} near the {d}" for a in ["cat", "dog", "bird", "fox"]
          for b in ["quickly", "slowly", "quietly"] for c in ["mat", "log", "wall", "chair"] for d in ["door", "tree"]]
tk = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tk.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

ds = Dataset.from_dict({"text": corpus})
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=16), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.1, seed=0)
cfg = GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=64, n_layer=2, n_head=2,
                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
model = GPT2LMHeadModel(cfg)
collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)

if args.fault == "return_tuple":
    # hand-written loop from a transformers 2.x tutorial: outputs used to be a tuple
    from torch.utils.data import DataLoader
    dl = DataLoader(split["train"], batch_size=8, shuffle=True, collate_fn=collator)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model.train()
    for step, batch in enumerate(dl, 1):
        loss, logits, past = model(**batch)
        loss.backward()
        opt.step(); opt.zero_grad()
        print(f"step {step} loss {loss.item():.4f}")
    sys.exit(0)

if args.fault == "adamw_import":
    opt = AdamW(model.parameters(), lr=5e-4, correct_bias=False)

ta = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=args.steps, learning_rate=5e-4, logging_steps=5, save_steps=10, eval_steps=10,
          report_to="none", use_cpu=True, seed=0, disable_tqdm=False, dataloader_num_workers=0)
if args.fault == "evaluation_strategy":
    ta.pop("use_cpu"); ta.update(evaluation_strategy="steps", no_cuda=True)
elif args.fault == "best_model_mismatch":
    ta.update(eval_strategy="steps", save_strategy="epoch", load_best_model_at_end=True,
              metric_for_best_model="eval_loss")
else:
    ta.update(eval_strategy="steps")
training_args = TrainingArguments(**ta)

tkw = dict(model=model, args=training_args, train_dataset=split["train"], eval_dataset=split["test"],
           data_collator=collator)
if args.fault == "trainer_tokenizer":
    tkw["tokenizer"] = tokenizer
else:
    tkw["processing_class"] = tokenizer
trainer = Trainer(**tkw)
trainer.train()
metrics = trainer.evaluate()
print(f"eval_loss={metrics['eval_loss']:.4f} perplexity={math.exp(metrics['eval_loss']):.2f}")
if args.fault == "load_metric":
    # token accuracy on the held-out split, as in the 2021 run_clm example
    from datasets import load_metric
    metric = load_metric("accuracy")
