"""Accelerate training loop with save_state / load_state resume (tiny GPT-2 built from a config)."""
import argparse
import os

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="acc_out")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--resume-from", default="")
    p.add_argument("--n-layer", type=int, default=2)
    a = p.parse_args()
    acc = Accelerator(project_dir=a.out)
    set_seed(0)
    cfg = GPT2Config(n_layer=a.n_layer, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    model, opt, sched = acc.prepare(model, opt, sched)
    start = 0
    if a.resume_from:
        acc.print(f"resuming from {a.resume_from}")
        acc.load_state(a.resume_from)
        start = int(os.path.basename(a.resume_from.rstrip("/")).split("_")[-1])
        acc.print(f"resumed at step {start}, lr={sched.get_last_lr()[0]:.2e}")
    g = torch.Generator().manual_seed(acc.process_index)
    for step in range(start + 1, start + a.steps + 1):
        ids = torch.randint(0, 512, (4, 48), generator=g)
        out = model(input_ids=ids, labels=ids)
        acc.backward(out.loss)
        opt.step()
        sched.step()
        opt.zero_grad()
        loss = acc.gather(out.loss.detach()).mean()
        if step % 5 == 0:
            acc.print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        if step % a.save_every == 0:
            acc.save_state(os.path.join(a.out, f"checkpoint_{step}"))
            acc.print(f"saved state checkpoint_{step}")
    acc.wait_for_everyone()
    acc.print("done")
    acc.end_training()


if __name__ == "__main__":
    main()
