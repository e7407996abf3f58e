"""accelerate-launched tiny GPT-2 (built from a config, no downloads) on random tokens."""
import os
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

acc = Accelerator(gradient_accumulation_steps=2, log_with=None)
set_seed(0)
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} device={acc.device}")
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
model.gradient_checkpointing_enable()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 256, (64, 32))
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=4, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for epoch in range(2):
    for (x,) in dl:
        with acc.accumulate(model):
            out = model(input_ids=x, labels=x)
            acc.backward(out.loss)
            opt.step()
            opt.zero_grad()
        step += 1
        if step % 4 == 0:
            l = acc.gather(out.loss.detach()).mean()
            acc.print(f"epoch {epoch} step {step} loss {l.item():.4f}")
acc.wait_for_everyone()
acc.print("done")
