"""Fine-tune a tiny GPT-2 for sequence classification from a local 'pretrained' LM checkpoint (built locally).

--fault none         healthy: config.pad_token_id set; loading warns about newly initialised score head
--fault no-pad-id    pad_token_id never set in the config (GPT-2 has none) while batching > 1
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--ckpt-dir", default="/work/rr75/bw/tmp/tiny-gpt2-lm")
p.add_argument("--steps", type=int, default=10)
args = p.parse_args()

hf_logging.set_verbosity_warning()
distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1

tok = CharTokenizer(CORPUS)
if rank == 0 and not os.path.exists(os.path.join(args.ckpt_dir, "config.json")):
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=tok.vocab_size, n_positions=64, n_embd=64, n_layer=2, n_head=4))
    lm.save_pretrained(args.ckpt_dir)
    print(f"wrote base LM checkpoint to {args.ckpt_dir}", flush=True)
if distributed:
    dist.barrier()

kw = {"num_labels": 2}
if args.fault != "no-pad-id":
    kw["pad_token_id"] = tok.pad_id
model = GPT2ForSequenceClassification.from_pretrained(args.ckpt_dir, **kw)
if distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)

# sentiment-ish toy task: does the sentence mention gold?
sents = [s.strip() + "." for s in CORPUS.split(".") if s.strip()][:64]
labels = [int("gold" in s) for s in sents]
sents, labels = sents[rank::world], labels[rank::world]


def batch(i, bs=4):
    ss = sents[i:i + bs]
    L = max(len(s) for s in ss)
    x = torch.full((len(ss), L), tok.pad_id)
    for r, s in enumerate(ss):
        x[r, : len(s)] = torch.tensor(tok.encode(s))  # right padding
    return x, torch.tensor(labels[i:i + bs])


opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    x, y = batch((step * 4) % (len(sents) - 4))
    t0 = time.time()
    out = model(input_ids=x, attention_mask=(x != tok.pad_id).long(), labels=y)
    out.loss.backward()
    opt.step()
    opt.zero_grad()
    acc = (out.logits.argmax(-1) == y).float().mean().item()
    print(f"[rank {rank}/{world}] step {step:02d} loss={out.loss.item():.4f} acc={acc:.2f} {1000 * (time.time() - t0):.0f}ms", flush=True)

if distributed:
    dist.barrier()
    dist.destroy_process_group()
print(f"[rank {rank}/{world}] fine-tuning finished", flush=True)
