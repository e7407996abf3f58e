"""Tiny GPT-2 trained with the HF Trainer on a locally built word-level tokenizer."""
import os, sys, argparse, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling)
p = argparse.ArgumentParser()
p.add_argument("--out", default="/tmp/au_hf")
p.add_argument("--steps", type=int, default=30)
a = p.parse_args()

words = "the a model trains on tiny data and the loss goes down slowly while gradients flow".split()
vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2, **{w: i + 3 for i, w in enumerate(sorted(set(words)))}}
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
g = torch.Generator().manual_seed(0)
texts = [" ".join(words[j] for j in torch.randint(0, len(words), (24,), generator=g).tolist()) for _ in range(256)]
enc = tok(texts, truncation=True, max_length=24)
ds = [{"input_ids": ids} for ids in enc["input_ids"]]
cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                 bos_token_id=2, eos_token_id=2)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, logging_steps=5,
                         learning_rate=5e-3, save_steps=15, report_to="none", use_cpu=True,
                         dataloader_num_workers=0, disable_tqdm=False, ddp_backend="gloo")
tr = Trainer(model=model, args=args, train_dataset=ds,
             data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
tr.train()
if tr.is_world_process_zero():
    tr.save_model(os.path.join(a.out, "final"))
    print("saved final model to", os.path.join(a.out, "final"))
