"""Family (storage): HF Trainer checkpointing onto constrained storage."""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--max-steps", type=int, default=40)
a = p.parse_args()
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=2000, n_positions=64)
model = GPT2LMHeadModel(cfg)
ids = torch.randint(0, 2000, (256, 32))
ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.max_steps,
                         save_steps=a.save_steps, logging_steps=5, report_to=[], use_cpu=True,
                         dataloader_num_workers=0)
Trainer(model=model, args=args, train_dataset=ds).train()
print("training complete", flush=True)
