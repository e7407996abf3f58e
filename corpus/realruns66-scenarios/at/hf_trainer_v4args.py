"""HF Trainer run on CPU/gloo with a tiny custom LM (no downloads).

--tie : tie the LM head to the input embedding (as many custom models do) -> Trainer saves with safetensors.
"""
import argparse, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--tie", action="store_true")
p.add_argument("--steps", type=int, default=300)
p.add_argument("--out", default="/work/rr66/at/tmp/hf_out")
p.add_argument("--save-steps", type=int, default=100)
args = p.parse_args()
V, H, S = 512, 64, 16


class DS(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, V, (n, S + 1), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i, :-1], "labels": self.x[i, 1:]}


class TinyLM(nn.Module):
    def __init__(self, tie):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.mlp = nn.Sequential(nn.Linear(H, 2 * H), nn.GELU(), nn.Linear(2 * H, H))
        self.ln = nn.LayerNorm(H)
        self.head = nn.Linear(H, V, bias=False)
        if tie:
            self.head.weight = self.emb.weight

    def forward(self, input_ids, labels=None):
        h = self.emb(input_ids)
        h = self.ln(h + self.mlp(h))
        logits = self.head(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))
        return {"loss": loss, "logits": logits}


targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, per_device_eval_batch_size=16,
    learning_rate=3e-3, warmup_steps=20, logging_steps=2, eval_strategy="steps", eval_steps=50,
    save_strategy="steps", save_steps=args.save_steps, report_to=[], use_cpu=True, ddp_backend="gloo",
    dataloader_num_workers=0, seed=0, disable_tqdm=False, save_safetensors=True,
)
trainer = Trainer(model=TinyLM(args.tie), args=targs, train_dataset=DS(8192, 1), eval_dataset=DS(64, 2))
trainer.train()
if trainer.is_world_process_zero():
    print("training complete")
