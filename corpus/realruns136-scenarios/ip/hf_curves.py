"""Tiny GPT-2 (built from a config, nothing downloaded) fine-tuned with the HF Trainer on a synthetic
prompt/answer set.  --fault:
  none          healthy run
  prompt-trunc  answers are masked out of the labels (prompt masking) but max_len is cut so that some
                samples keep no answer token: all labels -100 -> 0/0 loss on the rank that gets them
  lr-zero       scheduler 'constant_with_warmup' with warmup_steps larger than the run: lr never leaves ~0
"""
import argparse, os, warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--max-len", type=int, default=40)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--lr-peak", type=float, default=2e-3)
p.add_argument("--outdir", default="tmp/hf_out")
args = p.parse_args()

set_seed(0)
V = 96
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def build(n=1200):
    g = torch.Generator().manual_seed(7)
    rows = []
    for i in range(n):
        plen = int(torch.randint(6, 14, (1,), generator=g))
        a = torch.randint(10, V, (12,), generator=g)
        prompt = torch.randint(10, V, (plen,), generator=g)
        if args.fault == "prompt-trunc" and i % 4 == 1:
            # long system prompt on a few records
            prompt = torch.randint(10, V, (60,), generator=g)
        answer = (a.sort().values)  # answer: the sorted digits
        ids = torch.cat([torch.tensor([1]), prompt, torch.tensor([2]), answer, torch.tensor([3])])
        labels = ids.clone()
        labels[: plen + 2 if len(prompt) == plen else len(prompt) + 2] = -100
        ids, labels = ids[: args.max_len], labels[: args.max_len]
        pad = args.max_len - len(ids)
        rows.append({"input_ids": torch.cat([ids, torch.zeros(pad, dtype=torch.long)]).tolist(),
                     "attention_mask": [1] * len(ids) + [0] * pad,
                     "labels": torch.cat([labels, torch.full((pad,), -100)]).tolist()})
    return Dataset.from_list(rows)


ds = build()
cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=64, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=3)
model = GPT2LMHeadModel(cfg)
kw = dict(output_dir=args.outdir, per_device_train_batch_size=2, max_steps=args.steps, logging_steps=2,
          learning_rate=args.lr_peak, lr_scheduler_type="cosine", warmup_steps=5, save_strategy="no",
          report_to=[], logging_nan_inf_filter=False, dataloader_num_workers=0, seed=0,
          average_tokens_across_devices=False, disable_tqdm=False, max_grad_norm=1.0)
if args.fault == "lr-zero":
    kw.update(lr_scheduler_type="constant_with_warmup", warmup_steps=40000)
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=ds)
trainer.train()
if rank == 0:
    print("train done")
