"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer (CPU, gloo under torchrun)."""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, DataCollatorForLanguageModeling

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "bestmodel"])
p.add_argument("--out", default="hf_out")
p.add_argument("--max-steps", type=int, default=30)
a = p.parse_args()

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
model = GPT2LMHeadModel(cfg)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, 512, (512, 32), generator=g).tolist()
ds = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * 32] * 512, "labels": ids})
ev = ds.select(range(64))

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, max_steps=a.max_steps,
          learning_rate=5e-4, logging_steps=5, save_steps=15, report_to="none", use_cpu=True,
          dataloader_num_workers=0, ddp_backend="gloo")
if a.fault == "bestmodel":
    # keep the best checkpoint by eval loss; evaluation was switched to per-epoch in an earlier edit
    kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", eval_strategy="epoch",
              save_strategy="steps")
else:
    kw.update(eval_strategy="steps", eval_steps=15, save_strategy="steps")
args = TrainingArguments(**kw)
tr = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev)
tr.train()
print(tr.evaluate())
