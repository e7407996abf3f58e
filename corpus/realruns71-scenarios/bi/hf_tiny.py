"""Tiny GPT-2 language-model training with accelerate (CPU, gloo) on a locally built
character-level corpus; optional memory-hungry evaluation bookkeeping."""
import argparse, os, sys, math, time, logging, warnings
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--keep-logits-rank", type=int, default=-1, help="this rank accumulates full-vocab logits for an exact eval")
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--out", default=None)
p.add_argument("--grad-accum", type=int, default=1)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)
acc = Accelerator(gradient_accumulation_steps=args.grad_accum)
logger.info(acc.state, main_process_only=False)

text = ("the quick brown fox jumps over the lazy dog. " * 400).encode()
data = torch.tensor(list(text)) % args.vocab
cfg = GPT2Config(n_layer=2, n_embd=args.n_embd, n_head=4, vocab_size=args.vocab, n_positions=args.seq,
                 bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
model, opt, sched = acc.prepare(model, opt, sched)
g = torch.Generator().manual_seed(acc.process_index)
kept = []
t0 = time.time()
for step in range(1, args.steps + 1):
    idx = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=g)
    ids = torch.stack([data[i:i + args.seq] for i in idx])
    with acc.accumulate(model):
        out = model(input_ids=ids, labels=ids)
        acc.backward(out.loss)
        gn = acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad()
    if acc.process_index == args.keep_logits_rank:
        kept.append(out.logits.detach().repeat(4, 1, 1).to(torch.float64))
        logger.info(f"eval buffer: {len(kept)} chunks, {sum(k.numel()*8 for k in kept)/2**30:.2f} GiB", main_process_only=False)
    if step % 5 == 0:
        loss = acc.gather(out.loss.detach()[None]).mean().item()
        logger.info(f"step {step}/{args.steps} loss {loss:.4f} ppl {math.exp(loss):.1f} grad_norm {float(gn):.3f} lr {sched.get_last_lr()[0]:.2e} {args.batch*acc.num_processes*step/(time.time()-t0):.0f} seq/s")
acc.wait_for_everyone()
if args.out and acc.is_main_process:
    acc.unwrap_model(model).save_pretrained(args.out)
    logger.info(f"saved to {args.out}")
logger.info("training complete")
acc.end_training()
