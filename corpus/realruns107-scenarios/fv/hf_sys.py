"""Tiny GPT-2 trained with accelerate on a locally generated corpus; saves with save_pretrained."""
import argparse, os, time, math, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
from transformers.utils import logging as hf_logging

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--vocab", type=int, default=2000)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--out", default="hf_out")
p.add_argument("--save-every", type=int, default=20)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()


class Corpus(Dataset):
    """Synthetic token streams with a repeating grammar so loss goes down."""
    def __init__(self, n, seq, vocab):
        g = torch.Generator().manual_seed(1)
        base = torch.randint(4, vocab, (n, seq // 4), generator=g)
        self.data = base.repeat_interleave(4, dim=1)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    hf_logging.set_verbosity_warning()
    acc = Accelerator(cpu=True)
    set_seed(0)
    cfg = GPT2Config(vocab_size=args.vocab, n_positions=args.seq, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(cfg)
    dl = DataLoader(Corpus(2048, args.seq, args.vocab), batch_size=args.batch, shuffle=True, num_workers=args.workers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    acc.print(f"world={acc.num_processes} params={sum(p.numel() for p in model.parameters())/1e6:.2f}M")
    step = 0
    t0 = time.time()
    while step < args.steps:
        for batch in dl:
            out = model(**batch)
            acc.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
            step += 1
            if step % 5 == 0:
                l = acc.gather(out.loss.detach()).mean().item()
                acc.print(f"step {step} loss {l:.4f} ppl {math.exp(l):.1f} lr {sched.get_last_lr()[0]:.2e} elapsed {time.time()-t0:.1f}s")
            if step % args.save_every == 0:
                acc.wait_for_everyone()
                unwrapped = acc.unwrap_model(model)
                path = os.path.join(args.out, f"checkpoint-{step}")
                unwrapped.save_pretrained(path, is_main_process=acc.is_main_process, save_function=acc.save)
                acc.print(f"saved {path}")
            if step >= args.steps:
                break
    acc.wait_for_everyone()
    acc.print("training complete")
    acc.end_training()


if __name__ == "__main__":
    main()
