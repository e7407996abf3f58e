"""Tiny GPT-2 causal-LM fine-tune with the Hugging Face Trainer (CPU, offline).

Optimizer / scheduler choices come from flags, the way they would from a launch script:
  --optim NAME            TrainingArguments.optim
  --sched NAME            TrainingArguments.lr_scheduler_type
  --untie                 tie_word_embeddings=False (separate lm_head)
  --resume                resume_from_checkpoint=True from --out
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import torch
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          set_seed)

p = argparse.ArgumentParser()
p.add_argument("--optim", default="adamw_torch")
p.add_argument("--sched", default="linear")
p.add_argument("--untie", action="store_true")
p.add_argument("--resume", action="store_true")
p.add_argument("--out", default="/work/rr86/db/tmp/hf_out")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--eval", default="no")
args = p.parse_args()

set_seed(0)


class ToyLM(torch.utils.data.Dataset):
    """Repeating arithmetic token patterns, so the loss goes down quickly."""

    def __init__(self, n, seq=32, vocab=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        stride = torch.randint(1, 5, (n, 1), generator=g)
        self.ids = (start + stride * torch.arange(seq)) % vocab

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        x = self.ids[i]
        return {"input_ids": x, "attention_mask": torch.ones_like(x), "labels": x.clone()}


cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                 tie_word_embeddings=not args.untie)
model = GPT2LMHeadModel(cfg)
print(f"model params: {sum(p.numel() for p in model.parameters())/1e3:.1f}K tie_word_embeddings={cfg.tie_word_embeddings}",
      flush=True)

targs = TrainingArguments(
    output_dir=args.out,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=8,
    max_steps=args.steps,
    learning_rate=5e-4,
    weight_decay=0.01,
    warmup_steps=2,
    optim=args.optim,
    lr_scheduler_type=args.sched,
    logging_steps=5,
    save_steps=args.save_steps,
    save_strategy="steps",
    eval_strategy=args.eval,
    eval_steps=5,
    report_to=[],
    use_cpu=True,
    dataloader_num_workers=0,
    disable_tqdm=False,
    seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=ToyLM(400),
                  eval_dataset=ToyLM(32, seed=1) if args.eval != "no" else None)
result = trainer.train(resume_from_checkpoint=True if args.resume else None)
print(result, flush=True)
