"""Tiny GPT-2 trained with HF Trainer on random token data (offline).
--fault: none | metrics_bug (compute_metrics crashes at 2nd eval) | save_ro (output_dir not writable)"""
import argparse, os, math
import numpy as np, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr54/j/tmp/hf")
p.add_argument("--steps", type=int, default=60)
args = p.parse_args()


class DS(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, 128, (n, 16), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


calls = {"n": 0}


def compute_metrics(ev):
    calls["n"] += 1
    logits, labels = ev.predictions, ev.label_ids
    preds = logits.argmax(-1)
    acc = (preds[:, :-1] == labels[:, 1:]).mean()
    # "bleu" over an empty reference list gives nan, kept for the dashboard
    bleu = float(np.mean([]))
    out = {"acc": float(acc), "bleu": bleu}
    if args.fault == "metrics_bug" and calls["n"] >= 2:
        out["top5"] = float(np.mean(np.take_along_axis(logits, labels[..., None], axis=-1) >
                                    np.sort(logits, axis=-1)[..., -5, None], axis=(1, 2)))
    return out


cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, per_device_eval_batch_size=8,
    logging_steps=5, eval_strategy="steps", eval_steps=20, save_steps=20, save_total_limit=2,
    report_to=[], use_cpu=True, dataloader_num_workers=0, learning_rate=1e-3, disable_tqdm=False,
)
tr = Trainer(model=model, args=targs, train_dataset=DS(400, 0), eval_dataset=DS(32, 1),
             compute_metrics=compute_metrics)
tr.train()
print(tr.evaluate())
