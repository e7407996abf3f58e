"""Tiny GPT-2 (built from a config, no downloads) trained on synthetic token ids; plain DDP or Accelerate."""
import argparse, os, sys, time, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--use-accelerate", action="store_true")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--grad-ckpt", action="store_true")
args = p.parse_args()

def batches(n, bs=4, seq=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        ids = torch.randint(0, 512, (bs, seq), generator=g)
        yield {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids}

def main():
    cfg = GPT2Config(vocab_size=512, n_positions=64, n_layer=2, n_head=2, n_embd=64)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    if args.use_accelerate:
        from accelerate import Accelerator
        acc = Accelerator(cpu=True, gradient_accumulation_steps=2)
        model, opt = acc.prepare(model, opt)
        rank, pr = acc.process_index, acc.print
    else:
        import torch.distributed as dist
        from datetime import timedelta
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank = dist.get_rank()
        model = torch.nn.parallel.DistributedDataParallel(model)
        pr = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    for step, b in enumerate(batches(args.steps, seed=rank)):
        if args.use_accelerate:
            with acc.accumulate(model):
                out = model(**b, use_cache=True)
                acc.backward(out.loss); opt.step(); opt.zero_grad()
        else:
            out = model(**b, use_cache=True)
            out.loss.backward(); opt.step(); opt.zero_grad()
        pr(f"step {step} loss {out.loss.item():.4f}")
    pr("training complete")
    if args.use_accelerate:
        acc.wait_for_everyone(); acc.end_training()
    else:
        import torch.distributed as dist
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
