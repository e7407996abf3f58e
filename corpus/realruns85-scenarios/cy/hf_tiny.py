"""Tiny GPT-2 (built from config, no download) trained with HF Trainer or a plain accelerate loop."""
import argparse, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from torch.utils.data import Dataset


class RandomTokens(Dataset):
    def __init__(self, n, seq, vocab):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, seq), generator=g)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="trainer", choices=["trainer", "accelerate"])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--out", default="tmp/hf_out")
    args = p.parse_args()
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    ds = RandomTokens(256, 32, cfg.vocab_size)
    if args.mode == "trainer":
        targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps,
                                  logging_steps=3, save_strategy="no", report_to=[], use_cpu=True,
                                  ddp_backend="gloo", dataloader_num_workers=0, learning_rate=5e-4)
        Trainer(model=model, args=targs, train_dataset=ds).train()
    else:
        from accelerate import Accelerator
        acc = Accelerator(cpu=True)
        dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
        model, opt, dl = acc.prepare(model, opt, dl)
        step = 0
        for batch in dl:
            out = model(**batch)
            acc.backward(out.loss)
            opt.step(); opt.zero_grad()
            if step % 3 == 0:
                acc.print(f"step {step} loss {acc.gather(out.loss.detach()).mean().item():.4f}")
            step += 1
            if step >= args.steps:
                break
        acc.wait_for_everyone()
        acc.print("done")


if __name__ == "__main__":
    main()
