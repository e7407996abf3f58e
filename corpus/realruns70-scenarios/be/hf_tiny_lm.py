"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer on a locally built corpus and a
locally trained word-level tokenizer (no downloads). Launched with accelerate launch or torchrun."""
import argparse, os, json
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling)

p = argparse.ArgumentParser()
p.add_argument("--out", default="/work/rr70/be/data/hf_out")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--eval-on-rank0-only", action="store_true")
args = p.parse_args()

words = ("the model learns to predict the next token from a small corpus of short sentences about "
         "training runs ranks gradients checkpoints and evaluation loops on cpu").split()
import random
random.seed(0)
lines = [" ".join(random.choice(words) for _ in range(random.randint(6, 20))) for _ in range(400)]

tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator(lines, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

ds = Dataset.from_dict({"text": lines})
ds = ds.map(lambda b: tokenizer(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.1, seed=0)

cfg = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                 pad_token_id=tokenizer.pad_token_id)
model = GPT2LMHeadModel(cfg)

targs = TrainingArguments(
    output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
    max_steps=args.steps, logging_steps=5, eval_strategy="steps", eval_steps=15,
    save_strategy="no", report_to=[], use_cpu=True, ddp_backend="gloo",
    dataloader_num_workers=0, learning_rate=5e-4, warmup_steps=3, disable_tqdm=False,
)
trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
                  processing_class=tokenizer)
trainer.train()
metrics = trainer.evaluate()
if trainer.is_world_process_zero():
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}))
