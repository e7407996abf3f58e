"""Tiny GPT-2 language model trained with the Hugging Face Trainer on a locally built corpus.
Runs as plain `python` (single process) or under torchrun / accelerate launch (DDP on gloo)."""
import argparse, os, random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--out", default="/work/rr98/ex/tmp/hf_out")
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--logging-steps", type=int, default=5)
p.add_argument("--save-steps", type=int, default=0)
args = p.parse_args()

random.seed(0)
words = ("the model learns to predict next token from context while gradients flow back through "
         "layers and the optimizer updates weights slowly over many steps of training data").split()
corpus = [" ".join(random.choice(words) for _ in range(random.randint(8, 30))) for _ in range(2000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

ds = Dataset.from_dict({"text": corpus})
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)

targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=16, learning_rate=5e-4,
    logging_steps=args.logging_steps, save_strategy="steps" if args.save_steps else "no",
    save_steps=args.save_steps or 500, report_to=[], use_cpu=True, dataloader_num_workers=0,
    gradient_checkpointing=args.grad_ckpt, ddp_backend="gloo" if int(os.environ.get("WORLD_SIZE", 1)) > 1 else None,
    disable_tqdm=False, seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
if trainer.is_world_process_zero():
    trainer.save_model(os.path.join(args.out, "final"))
    print("saved", os.path.join(args.out, "final"))
