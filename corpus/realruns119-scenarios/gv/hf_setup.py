"""Tiny GPT-2 fine-tune set up through accelerate / HF Trainer (family: HF launcher & args set-up)."""
import argparse, os, sys, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel, TrainingArguments, Trainer
from torch.utils.data import Dataset

class ToyLM(Dataset):
    def __init__(self, n=64, seq=16, vocab=128):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
    def __len__(self): return len(self.ids)
    def __getitem__(self, i): return {"input_ids": self.ids[i], "labels": self.ids[i]}

def tiny_model():
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32))

def run_accelerate(steps):
    from accelerate import Accelerator
    acc = Accelerator()
    acc.print(f"accelerator: device={acc.device} mixed_precision={acc.mixed_precision} processes={acc.num_processes}")
    model = tiny_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = torch.utils.data.DataLoader(ToyLM(), batch_size=8)
    model, opt, dl = acc.prepare(model, opt, dl)
    for step, batch in enumerate(dl):
        out = model(**batch)
        acc.backward(out.loss); opt.step(); opt.zero_grad()
        acc.print(f"step {step} loss {out.loss.item():.4f}")
        if step + 1 >= steps: break
    acc.print("done")

def run_trainer(legacy_args):
    kw = dict(output_dir="out_hf", per_device_train_batch_size=8, num_train_epochs=1, logging_steps=2,
              report_to=[], use_cpu=True, save_strategy="no")
    if legacy_args:
        kw["evaluation_strategy"] = "steps"
        kw["eval_steps"] = 4
    args = TrainingArguments(**kw)
    tr = Trainer(model=tiny_model(), args=args, train_dataset=ToyLM(), eval_dataset=ToyLM(16))
    tr.train()
    print("trainer done", flush=True)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["accelerate", "trainer"], required=True)
    p.add_argument("--legacy-args", action="store_true")
    p.add_argument("--steps", type=int, default=6)
    a = p.parse_args()
    if a.mode == "accelerate":
        run_accelerate(a.steps)
    else:
        run_trainer(a.legacy_args)
