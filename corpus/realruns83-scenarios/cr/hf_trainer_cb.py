"""HF Trainer on a tiny GPT-2 built from config, with a custom collator and TrainerCallbacks.

usage: hf_trainer_cb.py --fault {none,best_model_strategy,eval_metric_key} [--out DIR]
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments)


class CharDataset(Dataset):
    def __init__(self, n=64, seq=16):
        g = torch.Generator().manual_seed(0)
        self.data = [torch.randint(1, 100, (seq,), generator=g) for _ in range(n)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i]}


class LMCollator:
    pad_id = 0

    def __call__(self, feats):
        ids = torch.stack([f["input_ids"] for f in feats])
        return {"input_ids": ids, "attention_mask": ids.ne(self.pad_id).long(), "labels": ids.clone()}


class MetricsPrinter(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if state.is_world_process_zero and logs:
            print(f"[metrics] step={state.global_step} " + " ".join(f"{k}={v}" for k, v in logs.items()), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--out", default="/work/rr83/cr/hf_out")
    a = p.parse_args()
    cfg = GPT2Config(vocab_size=100, n_positions=32, n_layer=2, n_head=2, n_embd=64)
    model = GPT2LMHeadModel(cfg)
    kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, max_steps=12,
              logging_steps=3, report_to=[], use_cpu=True, save_strategy="no", eval_strategy="steps", eval_steps=6,
              dataloader_num_workers=0)
    if a.fault == "best_model_strategy":
        # recipe copied from a tutorial: keep the best checkpoint, but saving every epoch
        kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="epoch",
                  eval_strategy="steps", eval_steps=6)
    args = TrainingArguments(**kw)
    tr = Trainer(model=model, args=args, train_dataset=CharDataset(), eval_dataset=CharDataset(16),
                 data_collator=LMCollator(), callbacks=[MetricsPrinter()])
    tr.train()
    print("final eval:", tr.evaluate(), flush=True)


if __name__ == "__main__":
    main()
