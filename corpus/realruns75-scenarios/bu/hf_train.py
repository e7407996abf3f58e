"""Tiny GPT-2 fine-tune with the HF Trainer (offline, CPU, launched by accelerate/torchrun).

--fault none | strategy-mismatch | removed-arg | report-tensorboard
"""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr75/bu/run/hf-out")
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()

cfg = GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, 128, (256, 32), generator=g)
ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
train, evald = ds.select(range(224)), ds.select(range(224, 256))

kw = dict(output_dir=args.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
          max_steps=args.steps, logging_steps=5, learning_rate=5e-4, save_total_limit=1,
          use_cpu=True, report_to="none", ddp_backend="gloo", dataloader_num_workers=0,
          eval_strategy="steps", eval_steps=10, save_strategy="steps", save_steps=10)
if args.fault == "strategy-mismatch":
    # copied from an older config: best-model tracking but saving once per epoch
    kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="epoch")
if args.fault == "report-tensorboard":
    kw.update(report_to="tensorboard")
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=train, eval_dataset=evald)
trainer.train()
m = trainer.evaluate()
if trainer.is_world_process_zero():
    print("final eval:", m)
