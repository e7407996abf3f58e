"""Tiny GPT-2 fine-tune with the Hugging Face Trainer (or an accelerate loop with --accel), CPU/gloo.
Built entirely from configs; nothing is downloaded."""
import argparse
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--accel", action="store_true")
p.add_argument("--max-steps", type=int, default=40)
p.add_argument("--outdir", default="/work/rr125/hj/runs/hf-out")
args = p.parse_args()


class RandomLM(Dataset):
    def __init__(self, n=512, seq=32):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 256, (n, seq), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i], "attention_mask": torch.ones_like(self.ids[i])}


cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)

if not args.accel:
    targs = TrainingArguments(output_dir=args.outdir, per_device_train_batch_size=8, max_steps=args.max_steps,
                              logging_steps=5, save_steps=20, save_total_limit=1, report_to=[],
                              use_cpu=True, ddp_backend="gloo", dataloader_num_workers=0, seed=0,
                              learning_rate=5e-4, warmup_steps=4)
    tr = Trainer(model=model, args=targs, train_dataset=RandomLM(), eval_dataset=RandomLM(64))
    tr.train()
    print(tr.evaluate())
else:
    from accelerate import Accelerator
    from accelerate.logging import get_logger
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    acc = Accelerator(cpu=True, gradient_accumulation_steps=2)
    log = get_logger("finetune")
    log.info(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}", main_process_only=False)
    dl = torch.utils.data.DataLoader(RandomLM(), batch_size=8, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    for batch in dl:
        with acc.accumulate(model):
            out = model(**batch)
            acc.backward(out.loss)
            opt.step()
            opt.zero_grad()
        step += 1
        if step % 8 == 0:
            log.info(f"step {step} loss {acc.gather(out.loss.detach()).mean().item():.4f}")
        if step >= args.max_steps:
            break
    acc.wait_for_everyone()
    acc.save_state(os.path.join(args.outdir, "accel_state"))
    log.info("finished")
