"""Tiny GPT-2 trained with the Hugging Face Trainer on a locally built dataset and word-level tokenizer
(no downloads). --out DIR, --save-steps N, --max-steps N, --warn-noise adds the usual config warnings."""
import argparse, os, random, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling)

p = argparse.ArgumentParser()
p.add_argument("--out", default="runs/hf")
p.add_argument("--save-steps", type=int, default=20)
p.add_argument("--max-steps", type=int, default=60)
p.add_argument("--n-embd", type=int, default=128)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()

rng = random.Random(0)
words = [f"w{i}" for i in range(300)]
texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(8, 40))) for _ in range(2000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, **{w: i + 3 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=args.n_embd, n_layer=2, n_head=4,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=16, max_steps=args.max_steps,
                          logging_steps=10, save_steps=args.save_steps, save_strategy="steps", report_to=[],
                          learning_rate=5e-4, dataloader_num_workers=args.workers, use_cpu=True, disable_tqdm=False)
trainer = Trainer(model=model, args=targs, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
print("final loss", trainer.state.log_history[-1])
