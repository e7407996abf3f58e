"""Tiny GPT-2 fine-tune with the HF Trainer, everything built locally (no hub).

--fault none | nopad | strategy
"""
import argparse, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="hf_out")
p.add_argument("--epochs", type=float, default=2)
a = p.parse_args()

texts = [f"the quick brown fox number {i} jumps over the lazy dog {i % 7} times" for i in range(64)]
texts += ["short line", "another short one here"] * 8

tok_model = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok_model.pre_tokenizer = pre_tokenizers.Whitespace()
tok_model.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
tok = PreTrainedTokenizerFast(tokenizer_object=tok_model, unk_token="[UNK]", eos_token="[EOS]")
if a.fault != "nopad":
    tok.pad_token = "[PAD]"

ds = Dataset.from_dict({"text": texts}).train_test_split(test_size=0.2, seed=0)
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])

cfg = GPT2Config(vocab_size=len(tok), n_positions=32, n_layer=2, n_head=2, n_embd=64,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
model = GPT2LMHeadModel(cfg)
print(f"model params: {sum(p.numel() for p in model.parameters())/1e3:.1f}K, vocab={len(tok)}")

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          num_train_epochs=a.epochs, learning_rate=5e-4, logging_steps=2, report_to=[],
          use_cpu=True, eval_strategy="epoch", save_strategy="epoch",
          dataloader_num_workers=0, seed=0)
if a.fault == "strategy":
    kw.update(load_best_model_at_end=True, eval_strategy="epoch", save_strategy="steps", save_steps=3)
if a.fault == "oldargs":
    kw.update(warmup_ratio=0.1)  # copied from an older recipe
args = TrainingArguments(**kw)

collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=collator)
trainer.train()
print(trainer.evaluate())
