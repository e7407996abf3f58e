"""Tiny GPT-2 LM fine-tune with accelerate, DEBUG logging and anomaly mode.
Each rank reads its own pre-tokenized shard; --fault bigvocab makes one rank's shard come from
a tokenizer with a larger vocabulary than the model config."""
import argparse, logging, os, sys
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--anomaly", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.DEBUG, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
for noisy in ("urllib3", "filelock", "fsspec"):
    logging.getLogger(noisy).setLevel(logging.WARNING)
acc = Accelerator(cpu=True)
log = get_logger("hf_train")
if args.anomaly:
    torch.autograd.set_detect_anomaly(True)
cfg = GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
model, opt = acc.prepare(model, opt)
rank = acc.process_index
tok_vocab = 640 if (args.fault == "bigvocab" and rank == args.rank) else 512  # shard tokenized with tokenizer-v2
g = torch.Generator().manual_seed(100 + rank)
log.info(f"rank {rank}: shard tokenizer vocab={tok_vocab}, model vocab={cfg.vocab_size}", main_process_only=False)
for step in range(args.steps):
    ids = torch.randint(0, tok_vocab, (4, 32), generator=g)
    out = model(input_ids=ids, labels=ids)
    acc.backward(out.loss)
    opt.step(); opt.zero_grad()
    loss = acc.gather(out.loss.detach()).mean()
    log.info(f"step {step} loss {loss.item():.4f}")
acc.wait_for_everyone()
log.info("done")
