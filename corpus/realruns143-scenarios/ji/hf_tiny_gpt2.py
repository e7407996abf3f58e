"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer on a locally built word-level tokenizer (no downloads)."""
import argparse, os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--out-dir", default="out/hf")
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--grad-ckpt", action="store_true")
args = p.parse_args()

random.seed(0)
words = [f"w{i}" for i in range(300)]
texts = [" ".join(random.choice(words) for _ in range(random.randint(8, 30))) for _ in range(400)]
vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2, **{w: i + 3 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True,
                                            remove_columns=["text"])
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(output_dir=args.out_dir, per_device_train_batch_size=8, max_steps=args.max_steps,
                          logging_steps=5, save_strategy="no", report_to=[], use_cpu=True,
                          gradient_checkpointing=args.grad_ckpt, dataloader_num_workers=0, learning_rate=5e-4)
tr = Trainer(model=model, args=targs, train_dataset=ds,
             data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
tr.train()
if tr.is_world_process_zero():
    print("final train loss:", tr.state.log_history[-1])
