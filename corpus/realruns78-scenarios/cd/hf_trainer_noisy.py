"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer on CPU (launch with accelerate or torchrun).
Built entirely offline: config-constructed model, character-level tokenizer built locally.
--eval-metric-bug makes compute_metrics fail inside a try/except of the user's callback (logged, ignored)."""
import argparse, logging, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback,
                          PreTrainedTokenizerFast)
from tokenizers import Tokenizer, models, pre_tokenizers
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--out", default="/tmp/rr78cd_hf")
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()

log = logging.getLogger("finetune")
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")

chars = sorted(set("abcdefghijklmnopqrstuvwxyz .,"))
vocab = {"<unk>": 0, "<eos>": 1, **{c: i + 2 for i, c in enumerate(chars)}}
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>")); tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>")
tok.pad_token = tok.eos_token

text = ["the quick brown fox jumps over the lazy dog. " * 3, "pack my box with five dozen liquor jugs, " * 3] * 64
ds = Dataset.from_dict({"text": text}).map(lambda b: tok(b["text"], truncation=True, max_length=64,
                                                         padding="max_length"), batched=True, remove_columns=["text"])
ds = ds.map(lambda b: {"labels": b["input_ids"]}, batched=True)
split = ds.train_test_split(test_size=0.1, seed=0)

model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                                   bos_token_id=1, eos_token_id=1))


class PushCallback(TrainerCallback):
    def on_save(self, a, state, control, **kw):
        try:
            import wandb  # optional dashboard sync
            wandb.save(os.path.join(a.output_dir, "*"))
        except Exception:
            log.exception("dashboard sync after save failed; continuing without it")


targs = TrainingArguments(output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8,
                          per_device_eval_batch_size=8, logging_steps=2, eval_strategy="steps", eval_steps=6,
                          save_steps=6, save_total_limit=1, report_to=[], use_cpu=True, dataloader_num_workers=0,
                          learning_rate=5e-4, warmup_steps=2)
trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                  callbacks=[PushCallback()])
trainer.train()
trainer.save_model(os.path.join(args.out, "final"))
if trainer.is_world_process_zero():
    log.info("saved final model to %s", os.path.join(args.out, "final"))
