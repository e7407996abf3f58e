"""Tiny GPT-2 LM training loop with HF accelerate (launched by `accelerate launch`)."""
import argparse
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--grad-accum", type=int, default=1)
a = p.parse_args()

acc = Accelerator(gradient_accumulation_steps=a.grad_accum)
set_seed(0)
acc.print(f"accelerator: {acc.state.distributed_type} procs={acc.num_processes} mp={acc.mixed_precision}")
model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_layer=2, n_head=2, n_embd=64))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.utils.data.DataLoader(torch.randint(0, 128, (160, 24)), batch_size=8, shuffle=True)
model, opt, data = acc.prepare(model, opt, data)
model.train()
for step, ids in enumerate(data):
    if step >= a.steps:
        break
    with acc.accumulate(model):
        out = model(input_ids=ids, labels=ids)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
    loss = acc.gather(out.loss.detach()).mean()
    acc.print(f"step {step} loss {loss.item():.4f}")
acc.wait_for_everyone()
acc.print("training complete")
