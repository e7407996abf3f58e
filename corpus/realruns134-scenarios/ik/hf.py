"""Tiny GPT-2 (built from a config, nothing downloaded) trained with the HF Trainer or an
accelerate loop.  --mode trainer | accel ; --bug gather-main-only"""
import argparse, os, sys, time, warnings
import torch
from torch.utils.data import Dataset

p = argparse.ArgumentParser()
p.add_argument("--mode", default="trainer")
p.add_argument("--bug", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--out-dir", default="out_hf")
p.add_argument("--pg-timeout", type=int, default=0)
args = p.parse_args()

from transformers import GPT2Config, GPT2LMHeadModel


class RandText(Dataset):
    def __init__(self, n=256, L=32, vocab=128):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, L), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i].clone()}


cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)

if args.mode == "trainer":
    from transformers import Trainer, TrainingArguments
    ta = TrainingArguments(output_dir=args.out_dir, per_device_train_batch_size=8, max_steps=args.steps,
                           logging_steps=5, save_strategy="no", report_to=[], ddp_backend="gloo",
                           use_cpu=True, dataloader_num_workers=0, learning_rate=5e-4,
                           eval_strategy="steps", eval_steps=15, per_device_eval_batch_size=8)
    tr = Trainer(model=model, args=ta, train_dataset=RandText(), eval_dataset=RandText(64))
    tr.train()
    print("final eval:", tr.evaluate())
else:
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    kw = []
    if args.pg_timeout:
        from datetime import timedelta
        from accelerate.utils import InitProcessGroupKwargs
        kw = [InitProcessGroupKwargs(timeout=timedelta(seconds=args.pg_timeout))]
    acc = Accelerator(cpu=True, kwargs_handlers=kw)
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    dl = DataLoader(RandText(), batch_size=8, shuffle=True)
    edl = DataLoader(RandText(64), batch_size=8)
    model, opt, dl, edl = acc.prepare(model, opt, dl, edl)
    step = 0
    for ep in range(3):
        for b in dl:
            out = model(**b)
            acc.backward(out.loss)
            opt.step(); opt.zero_grad()
            step += 1
            if step % 5 == 0:
                print(f"[proc {acc.process_index}] step {step} loss {out.loss.item():.4f}", flush=True)
            if step % 10 == 0:
                model.eval()
                losses = []
                with torch.no_grad():
                    for eb in edl:
                        losses.append(model(**eb).loss.reshape(1))
                model.train()
                loss_t = torch.cat(losses)
                if args.bug == "gather-main-only":
                    if acc.is_main_process:
                        # only the main process logs, so the gather was moved in here
                        all_l = acc.gather(loss_t)
                        print(f"eval step {step}: loss {all_l.mean().item():.4f}", flush=True)
                else:
                    all_l = acc.gather(loss_t)
                    acc.print(f"eval step {step}: loss {all_l.mean().item():.4f}")
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    acc.wait_for_everyone()
    acc.print("done")
