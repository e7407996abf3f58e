"""Tiny GPT-2 fine-tune with accelerate (offline, random-init model built from a config)."""
import argparse, os, sys, time, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="full")    # full | bitfit
ap.add_argument("--grad-ckpt", action="store_true")
ap.add_argument("--reentrant", action="store_true")
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--mp", default="no")
args = ap.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)
acc = Accelerator(mixed_precision=args.mp)
logger.info(acc.state, main_process_only=False)

cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg)
if args.grad_ckpt:
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": args.reentrant})
if args.mode == "bitfit":
    # BitFit: train only bias terms inside the transformer blocks
    for n, p in model.named_parameters():
        p.requires_grad = n.startswith("transformer.h.") and n.endswith(".bias")
if args.mode == "head_only":
    # linear-probe style: freeze the transformer body, keep training the LM head
    opt_params = list(model.parameters())
    model.transformer.requires_grad_(False)
trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
logger.info(f"trainable params: {trainable} / {sum(p.numel() for p in model.parameters())}")
model.train()
if args.mode == "head_only":
    opt = torch.optim.AdamW(opt_params, lr=5e-4)
else:
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-4)
g = torch.Generator().manual_seed(0)
data = torch.randint(0, 256, (64, 32), generator=g)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=8, shuffle=True)
model, opt, loader = acc.prepare(model, opt, loader)

step = 0
t0 = time.time()
while step < args.steps:
    for (ids,) in loader:
        out = model(input_ids=ids, labels=ids)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
        if step % 5 == 0:
            logger.info(f"step {step} loss {out.loss.item():.4f} elapsed {time.time()-t0:.1f}s")
        step += 1
        if step >= args.steps:
            break
acc.wait_for_everyone()
logger.info("training complete")
acc.end_training()
