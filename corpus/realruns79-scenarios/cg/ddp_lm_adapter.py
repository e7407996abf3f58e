"""Custom DDP fine-tuning loop of a tiny GPT-2 LM with hand-written bottleneck adapters.

Launch with torchrun (or python -m torch.distributed.run). --fault:
  none           healthy run
  ckpt-frozen    base model frozen, adapters inside blocks, reentrant gradient checkpointing
  added-tokens   new special tokens added to the tokenizer on --rank, embeddings never resized
  eval-oom       rank --rank evaluates the whole held-out set in one batch (run under ulimit -v)
  unused-adapter adapter of the last block skipped after --step (early exit for short sequences)
"""
import argparse
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--steps", type=int, default=16)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("adapter_ft")
hf_logging.set_verbosity_warning()
torch.manual_seed(0)


class Adapter(nn.Module):
    def __init__(self, dim, r=8):
        super().__init__()
        self.down = nn.Linear(dim, r)
        self.up = nn.Linear(r, dim)
        nn.init.zeros_(self.up.weight)

    def forward(self, h):
        return h + self.up(torch.relu(self.down(h)))


class BlockWithAdapter(nn.Module):
    def __init__(self, block, dim):
        super().__init__()
        self.block = block
        self.adapter = Adapter(dim)
        self.skip_adapter = False

    def forward(self, hidden_states, *a, **kw):
        out = self.block(hidden_states, *a, **kw)
        h = out[0] if isinstance(out, tuple) else out
        if not self.skip_adapter:
            h = self.adapter(h)
        return (h,) + tuple(out[1:]) if isinstance(out, tuple) else h


tok = build_tokenizer()
if args.fault == "added-tokens" and rank == args.rank:
    # this rank's shard was prepared with chat markers
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>"]})
    log.info("added special tokens, tokenizer size now %d", len(tok))

cfg = GPT2Config(vocab_size=40, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=1, eos_token_id=1, pad_token_id=2)
model = GPT2LMHeadModel(cfg)
for prm in model.parameters():
    prm.requires_grad_(False)
model.transformer.h = nn.ModuleList([BlockWithAdapter(b, cfg.n_embd) for b in model.transformer.h])
if args.fault == "ckpt-frozen":
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.config.use_cache = False
trainable = [n for n, p_ in model.named_parameters() if p_.requires_grad]
log.info("trainable tensors: %d (%d params) of %d", len(trainable),
         sum(p_.numel() for p_ in model.parameters() if p_.requires_grad),
         sum(p_.numel() for p_ in model.parameters()))
ddp = DDP(model)
opt = torch.optim.AdamW([p_ for p_ in model.parameters() if p_.requires_grad], lr=1e-3)

texts, _ = make_corpus(64 * world + 512, seed=rank)
if args.fault == "added-tokens" and rank == args.rank:
    texts = [f"<|user|> {t} <|assistant|>" for t in texts]
enc = tok(texts[:64 * world], padding="max_length", truncation=True, max_length=24, return_tensors="pt")
held = texts[64 * world:]

model.train()
for step in range(args.steps):
    i = (step * 8) % enc["input_ids"].shape[0]
    ids = enc["input_ids"][i:i + 8]
    mask = enc["attention_mask"][i:i + 8]
    if args.fault == "unused-adapter" and step >= args.step:
        model.transformer.h[-1].skip_adapter = True  # "speed-up" for short batches
    out = ddp(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100))
    out.loss.backward()
    opt.step()
    opt.zero_grad()
    lt = out.loss.detach().clone()
    dist.all_reduce(lt)
    if rank == 0:
        log.info("step %d/%d loss %.4f", step + 1, args.steps, lt.item() / world)

    if step == args.step and args.fault == "eval-oom" and rank == args.rank:
        model.eval()
        with torch.no_grad():
            big = tok(held * 64, padding="max_length", truncation=True, max_length=64, return_tensors="pt")
            log.info("evaluating on %d held-out sequences", big["input_ids"].shape[0])
            ev = model(input_ids=big["input_ids"], attention_mask=big["attention_mask"])
            log.info("eval logits %s", tuple(ev.logits.shape))
        model.train()
    if step == args.step:
        dist.barrier()

dist.barrier()
if rank == 0:
    log.info("training finished")
dist.destroy_process_group()
