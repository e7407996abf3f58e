"""accelerate-launched tiny GPT-2 fine-tune on random tokens (CPU, gloo)."""
import os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

acc = Accelerator(gradient_accumulation_steps=2, log_with=None)
acc.print(f"distributed_type={acc.state.distributed_type} num_processes={acc.num_processes}")
set_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64))
model.gradient_checkpointing_enable()
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
data = torch.randint(0, 256, (128, 32))
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=8, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
model.train()
for step, (b,) in enumerate(dl, 1):
    with acc.accumulate(model):
        out = model(input_ids=b, labels=b)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
    if step % 4 == 0:
        l = acc.gather(out.loss.detach()).mean()
        acc.print(f"step {step} loss {l.item():.4f}")
acc.wait_for_everyone()
acc.print("done")
