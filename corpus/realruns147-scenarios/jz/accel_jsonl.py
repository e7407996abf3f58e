"""accelerate training of a bag-of-words classifier on a local JSONL file.

  --fault none          healthy run; the code still uses several deprecated idioms (warning storm)
  --fault null_text     one record has "text": null (exported from a DB with a NULL column)
"""
import argparse
import json
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="reviews.jsonl")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()

acc = Accelerator()
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")

VOCAB = ["good", "bad", "great", "awful", "fine", "boring", "fun", "slow", "fast", "ok"]
if acc.is_main_process and not os.path.exists(a.data):
    import random
    rnd = random.Random(0)
    with open(a.data, "w") as f:
        for i in range(400):
            words = rnd.choices(VOCAB, k=rnd.randint(3, 9))
            rec = {"id": i, "text": " ".join(words), "label": int(words.count("good") + words.count("great") + words.count("fun") > 1)}
            if a.fault == "null_text" and i == 237:
                rec["text"] = None
            f.write(json.dumps(rec) + "\n")
acc.wait_for_everyone()


class JsonlDS(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(l) for l in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        toks = r["text"].lower().split()
        v = torch.zeros(len(VOCAB))
        for t in toks:
            if t in VOCAB:
                v[VOCAB.index(t)] += 1
        return v, r["label"]


ds = JsonlDS(a.data)
dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=a.workers)
model = nn.Sequential(nn.Linear(len(VOCAB), 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)

step = 0
for ep in range(a.epochs):
    for xb, yb in dl:
        step += 1
        sched.step()  # (scheduler stepped before the optimizer)
        with torch.cuda.amp.autocast(enabled=False):
            out = model(xb)
        loss = F.cross_entropy(out, yb)
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        if step % 5 == 0:
            acc.print(f"epoch {ep} step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
    if acc.is_main_process:
        ck = os.path.join("accel_ckpt", f"ep{ep}")
        acc.save_state(ck)
acc.print("done")
