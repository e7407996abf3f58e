"""Tiny GPT-2 (built from a config, nothing downloaded) trained with the HF Trainer,
under torchrun on CPU/gloo.

--fault none         healthy run
--fault best-ckpt    load_best_model_at_end with eval every N steps but save once per epoch
--fault ragged-rank  faulting rank's dataset has one ragged example (no padding collator)
"""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, default_data_collator

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--out", default="tmp/hf_out")
p.add_argument("--max-steps", type=int, default=12)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
g = torch.Generator().manual_seed(rank)
n, T = 96, 32
rows = {"input_ids": torch.randint(0, 256, (n, T), generator=g).tolist()}
if args.fault == "ragged-rank" and rank == args.fault_rank:
    rows["input_ids"][43] = rows["input_ids"][43][:27]  # last document of the shard was shorter
rows["labels"] = [list(r) for r in rows["input_ids"]]
ds = Dataset.from_dict(rows)
ev = Dataset.from_dict({"input_ids": rows["input_ids"][:16], "labels": rows["labels"][:16]})

cfg = GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)

kw = dict(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.max_steps,
          logging_steps=2, report_to=[], use_cpu=True, ddp_backend="gloo",
          dataloader_num_workers=0, save_strategy="no", eval_strategy="no", seed=0)
if args.fault == "best-ckpt":
    kw.update(eval_strategy="steps", eval_steps=4, save_strategy="epoch", load_best_model_at_end=True,
              metric_for_best_model="eval_loss")
targs = TrainingArguments(**kw)
trainer = Trainer(model=model, args=targs, train_dataset=ds, eval_dataset=ev,
                  data_collator=default_data_collator)
res = trainer.train()
print(f"[rank {rank}] train done: {res.metrics}", flush=True)
