"""Tiny GPT-2 fine-tune with HF Trainer; eval keeps all logits (no eval_accumulation_steps / preprocess_logits_for_metrics)."""
import argparse, os, resource
import numpy as np
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--vocab", type=int, default=8000)
p.add_argument("--n-eval", type=int, default=1024)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--cap-mb", type=int, default=0, help="RLIMIT_AS headroom over current VM (0: none)")
p.add_argument("--slim-eval", action="store_true", help="argmax logits before gathering")
p.add_argument("--out", default="/work/rr60/aa/hf_out")
a = p.parse_args()

rng = np.random.default_rng(0)
def make(n):
    ids = rng.integers(0, a.vocab, size=(n, a.seq)).tolist()
    return Dataset.from_dict({"input_ids": ids, "labels": ids})

train, evald = make(256), make(a.n_eval)
model = GPT2LMHeadModel(GPT2Config(vocab_size=a.vocab, n_positions=a.seq, n_layer=2, n_head=2, n_embd=64))

def metrics(ev):
    preds, labels = ev
    if preds.ndim == 3:
        preds = preds.argmax(-1)
    return {"token_acc": float((preds[:, :-1] == labels[:, 1:]).mean())}

args = TrainingArguments(
    output_dir=a.out, per_device_train_batch_size=16, per_device_eval_batch_size=32, max_steps=24,
    eval_strategy="steps", eval_steps=12, logging_steps=4, save_strategy="no", report_to=[],
    use_cpu=True, dataloader_num_workers=0, disable_tqdm=False,
)
if a.cap_mb:
    vm = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) // 1024
    resource.setrlimit(resource.RLIMIT_AS, ((vm + a.cap_mb) << 20, resource.RLIM_INFINITY))
trainer = Trainer(
    model=model, args=args, train_dataset=train, eval_dataset=evald, compute_metrics=metrics,
    preprocess_logits_for_metrics=(lambda logits, labels: logits.argmax(-1)) if a.slim_eval else None,
)
trainer.train()
print("final eval:", trainer.evaluate())
