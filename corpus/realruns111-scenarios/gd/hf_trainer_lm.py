"""Tiny GPT-2 causal-LM fine-tune with the Hugging Face Trainer (CPU, offline).

--lr / --warmup / --max-grad-norm choose the optimisation setting; --bad-frac makes
that fraction of rows whose labels are all -100 (fully masked, e.g. prompt-only examples after truncation).
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--warmup", type=int, default=0)
p.add_argument("--max-grad-norm", type=float, default=1.0)
p.add_argument("--out", default="tmp/hf_out")
p.add_argument("--scheduler", default="linear")
p.add_argument("--bad-frac", type=float, default=0.0)
args = p.parse_args()

torch.manual_seed(0)
V, T = 128, 32
cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)

g = torch.Generator().manual_seed(1)
rows = []
for i in range(512):
    # simple repeating patterns so the loss can go down
    start = int(torch.randint(1, V - 8, (1,), generator=g))
    seq = [(start + (j % 7)) % V for j in range(T)]
    lab = list(seq)
    if float(torch.rand(1, generator=g)) < args.bad_frac:
        # prompt longer than max_length: every response token truncated away, only prompt (-100) left
        lab = [-100] * T
    rows.append({"input_ids": seq, "attention_mask": [1] * T, "labels": lab})
ds = Dataset.from_list(rows)

targs = TrainingArguments(
    output_dir=args.out,
    per_device_train_batch_size=8,
    learning_rate=args.lr,
    warmup_steps=args.warmup,
    lr_scheduler_type=args.scheduler,
    max_steps=args.steps,
    logging_steps=1,
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    max_grad_norm=args.max_grad_norm,
    dataloader_num_workers=0,
    ddp_backend="gloo" if "WORLD_SIZE" in os.environ else None,
    disable_tqdm=False,
    seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=ds)
trainer.train()
print("done; final global step", trainer.state.global_step)
