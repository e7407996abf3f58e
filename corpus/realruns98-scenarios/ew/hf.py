"""Tiny GPT-2 trained with the HF Trainer (offline, built from config). --mode ok_finetune | lm"""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1"); os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import torch
from datasets import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--mode", default="lm"); p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--max-grad-norm", type=float, default=1.0); p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="runs/hf_out"); p.add_argument("--base", default="runs/hf_base")
args = p.parse_args()

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64, pad_token_id=0)
g = torch.Generator().manual_seed(0)
ids = torch.randint(1, 256, (256, 32), generator=g)
ids[:, 1::2] = (ids[:, 0::2] + 7) % 256  # learnable structure
if args.mode == "lm":
    ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
    model = GPT2LMHeadModel(cfg)
else:
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0 and not os.path.exists(os.path.join(args.base, "config.json")):
        GPT2LMHeadModel(cfg).save_pretrained(args.base)
    if "RANK" in os.environ:
        import torch.distributed as dist, datetime
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60)); dist.barrier()
    labels = (ids[:, 0] % 4).tolist()
    ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": labels})
    model = GPT2ForSequenceClassification.from_pretrained(args.base, num_labels=4)
targs = TrainingArguments(output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, learning_rate=args.lr,
                          logging_steps=2, save_strategy="no", report_to=[], use_cpu=True, ddp_backend=("gloo" if "RANK" in os.environ else None),
                          max_grad_norm=args.max_grad_norm, disable_tqdm=False, dataloader_num_workers=0, seed=0)
trainer = Trainer(model=model, args=targs, train_dataset=ds)
out = trainer.train()
print("train result:", out)
