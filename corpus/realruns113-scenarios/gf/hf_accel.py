"""Tiny GPT-2 trained with accelerate (gloo on CPU); model from a config, data generated locally."""
import os, math, argparse
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--mixed-precision", default="no")
args = p.parse_args()

acc = Accelerator(mixed_precision=args.mixed_precision, cpu=True)
set_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
ids = torch.randint(0, 256, (512, 32))
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids), batch_size=8, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
acc.print(f"world={acc.num_processes} device={acc.device} mixed_precision={acc.mixed_precision}")
step = 0
model.train()
while step < args.steps:
    for (b,) in dl:
        out = model(input_ids=b, labels=b)
        acc.backward(out.loss)
        acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad()
        if step % 5 == 0:
            l = acc.gather(out.loss.detach()[None]).mean().item()
            acc.print(f"step {step} loss {l:.4f} ppl {math.exp(l):.1f} lr {sched.get_last_lr()[0]:.2e}")
        step += 1
        if step >= args.steps: break
acc.wait_for_everyone()
acc.print("training complete")
acc.end_training()
