"""torch.multiprocessing.spawn fine-tuning of a tiny BERT classifier (notebook-style script).

--fault:
  none          healthy
  lambda-coll   DataLoader workers with the spawn start method and a lambda collate_fn
  no-guard      spawn launched at module level, no `if __name__ == "__main__":` guard
"""
import argparse
import datetime
import logging
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from tqdm import tqdm
from transformers import BertConfig, BertForSequenceClassification

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", default="36320")
args = p.parse_args()


def worker(rank, world, fault, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    logging.basicConfig(format=f"%(asctime)s rank{rank} %(levelname)s: %(message)s", level=logging.INFO)
    torch.manual_seed(0)
    tok = build_tokenizer()
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, num_labels=2, pad_token_id=tok.pad_token_id)
    model = DDP(BertForSequenceClassification(cfg))
    texts, labels = make_corpus(256, seed=0)
    enc = tok(texts, padding="max_length", truncation=True, max_length=24)
    items = [(torch.tensor(a), torch.tensor(m), y) for a, m, y in zip(enc["input_ids"], enc["attention_mask"], labels)]
    kw = {}
    if fault == "lambda-coll":
        kw = dict(num_workers=1, multiprocessing_context="spawn",
                  collate_fn=lambda b: tuple(torch.stack([x[i] for x in b]) if i < 2 else torch.tensor([x[2] for x in b]) for i in range(3)))
    dl = DataLoader(items, batch_size=16, sampler=DistributedSampler(items, world, rank), **kw)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(2):
        dl.sampler.set_epoch(epoch)
        for ids, mask, y in tqdm(dl, desc=f"rank{rank} epoch {epoch}", disable=rank != 0):
            out = model(input_ids=ids, attention_mask=mask, labels=torch.as_tensor(y))
            out.loss.backward()
            opt.step()
            opt.zero_grad()
        logging.info("epoch %d loss %.4f", epoch, out.loss.item())
    dist.destroy_process_group()


def launch():
    print(f"spawning {args.world} workers", flush=True)
    mp.spawn(worker, args=(args.world, args.fault, args.port), nprocs=args.world, join=True)
    print("all workers finished", flush=True)


if args.fault == "no-guard":
    launch()
elif __name__ == "__main__":
    launch()
