"""Tiny GPT-2 LM fine-tune with accelerate on CPU (built from config, no downloads)."""
import argparse
import math
import warnings
import torch
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fault", default="none")
p.add_argument("--grad-accum", type=int, default=2)
args = p.parse_args()

TEXT = ("the quick brown fox jumps over the lazy dog while the model learns to predict "
        "the next character of this small synthetic corpus again and again ") * 40


class CharDS(Dataset):
    def __init__(self, text, block=32):
        self.ids = torch.tensor([ord(c) % 96 for c in text])
        self.block = block

    def __len__(self):
        return (len(self.ids) - 1) // self.block

    def __getitem__(self, i):
        s = self.ids[i * self.block:(i + 1) * self.block]
        return {"input_ids": s, "labels": s.clone()}


def main():
    acc = Accelerator(gradient_accumulation_steps=args.grad_accum, log_with=None)
    set_seed(0)
    cfg = GPT2Config(vocab_size=96, n_positions=64, n_layer=2, n_head=2, n_embd=64)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    dl = DataLoader(CharDS(TEXT), batch_size=8, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    acc.print(f"processes={acc.num_processes} device={acc.device} mixed_precision={acc.mixed_precision}")
    step = 0
    model.train()
    while step < args.steps:
        for batch in dl:
            with acc.accumulate(model):
                out = model(**batch)
                acc.backward(out.loss)
                opt.step()
                opt.zero_grad()
            if acc.sync_gradients:
                step += 1
                l = acc.gather(out.loss.detach()).mean().item()
                acc.print(f"step {step} loss {l:.4f} ppl {math.exp(l):.1f}")
                if step >= args.steps:
                    break
    acc.wait_for_everyone()
    acc.print("done")
    acc.end_training()


if __name__ == "__main__":
    main()
