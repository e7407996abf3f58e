"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer (offline, random tokens)."""
import argparse, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from torch.utils.data import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="out_hf")
p.add_argument("--max-steps", type=int, default=30)
args = p.parse_args()

if args.fault == "old_optimizer_import":
    from transformers import AdamW, get_linear_schedule_with_warmup  # written for transformers 4.x

class RandomLM(Dataset):
    def __init__(self, n=256, seq=32, vocab=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, seq), generator=g)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return {"input_ids": self.x[i], "labels": self.x[i]}

cfg = GPT2Config(vocab_size=512, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
kw = dict(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.max_steps, logging_steps=5,
          learning_rate=5e-4, report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=False,
          ddp_backend="gloo", dataloader_num_workers=0)
if args.fault == "best_model_mismatch":
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=10, save_strategy="epoch",
              metric_for_best_model="eval_loss")
if args.fault == "legacy_kwarg":
    kw.update(evaluation_strategy="steps", eval_steps=10)
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=RandomLM(), eval_dataset=RandomLM(n=32))
out = trainer.train()
print("train_result:", out.metrics)
