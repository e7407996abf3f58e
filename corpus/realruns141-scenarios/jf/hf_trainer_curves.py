"""HF Trainer runs (tiny GPT-2 built from a config, local synthetic data) with loss curves in Trainer dicts.

--case:
  log-feature-nan   regression head on GPT-2 features plus a numeric column log-transformed with np.log (zeros -> -inf)
  spike-recover     healthy LM run: one batch of junk repeats causes a loss/grad_norm spike that recovers (label none)
"""
import argparse, os, warnings

import numpy as np
import torch
import torch.nn as nn
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--case", default="spike-recover")
p.add_argument("--out-dir", default="/tmp/jf_hf_out")
p.add_argument("--max-steps", type=int, default=60)
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)
rng = np.random.default_rng(0)
V = 128
cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=64, n_layer=2, n_head=4)


class DS(torch.utils.data.Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class GPT2Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = GPT2Model(cfg)
        self.num_proj = nn.Linear(1, 64)
        self.head = nn.Linear(64, 1)

    def forward(self, input_ids, num_feat, labels=None):
        h = self.body(input_ids=input_ids).last_hidden_state[:, -1]
        pred = self.head(h + self.num_proj(num_feat[:, None])).squeeze(-1)
        loss = nn.functional.mse_loss(pred, labels)
        return {"loss": loss, "logits": pred}


if args.case == "log-feature-nan":
    n = 640
    ids = rng.integers(0, V, (n, 32))
    views = rng.poisson(3.0, n).astype(np.float32)  # page views; some are 0
    views[:100] += 1  # the first chunk of the export had no zero counts
    log_views = np.log(views)  # log-scale the heavy-tailed count feature
    y = (log_views * 0.5 + ids[:, -1] / V).astype(np.float32)
    items = [{"input_ids": torch.tensor(ids[i]), "num_feat": torch.tensor(log_views[i]),
              "labels": torch.tensor(y[i])} for i in range(n)]
    print(f"dataset: {n} rows, num_feat min={log_views.min()} max={log_views.max():.3f}", flush=True)
    model = GPT2Regressor()
else:
    n = 800
    items = []
    for i in range(n):
        period = int(rng.integers(2, 6))
        base = rng.integers(0, V, period)
        seq = np.tile(base, 64 // period + 1)[:48]
        items.append({"input_ids": torch.tensor(seq), "labels": torch.tensor(seq)})
    # a shard of corrupted rows (one token repeated, random labels) right after warm-up
    for i in range(8 * 14, 8 * 16):
        junk = rng.integers(0, V, 48)
        items[i] = {"input_ids": torch.tensor(junk), "labels": torch.tensor(rng.permutation(junk))}
    model = GPT2LMHeadModel(cfg)
    warnings.warn("`resume_download` is deprecated and will be removed in version 1.0.0. Downloads always resume when possible.", FutureWarning)

targs = TrainingArguments(
    output_dir=args.out_dir,
    per_device_train_batch_size=8,
    max_steps=args.max_steps,
    learning_rate=3e-3 if args.case == "spike-recover" else 1e-3,
    warmup_steps=10,
    logging_steps=5,
    save_strategy="no",
    report_to=[],
    logging_nan_inf_filter=False,
    max_grad_norm=1.0,
    dataloader_num_workers=0,
    use_cpu=True,
    disable_tqdm=False,
    seed=0,
)
trainer = Trainer(model=model, args=targs, train_dataset=DS(items))
res = trainer.train()
print(res, flush=True)
