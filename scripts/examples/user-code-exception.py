#!/usr/bin/env python
"""Real example logs for `user-code-exception`.

positive-1: the training script reads a config option the argparse parser never
defined (AttributeError: 'Namespace' object has no attribute 'warmup_ratio').
positive-2 (torchrun): the collate function in the script expects a 'label' key the
dataset names 'labels' (KeyError raised in train.py on every rank).
Run: .venv/bin/python scripts/examples/user-code-exception.py
"""
ID = "user-code-exception"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def build_scheduler(opt, args, total_steps):
    import torch
    warmup = int(total_steps * args.warmup_ratio)          # BUG: flag is --warmup-steps
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, warmup)))


def collate(batch):
    import torch
    return {"input": torch.stack([b["input"] for b in batch]),
            "label": torch.tensor([b["label"] for b in batch])}   # BUG: dataset key is "labels"


def train(mode: str) -> None:
    import argparse
    import logging

    import torch
    import torch.nn as nn

    logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--warmup-steps", type=int, default=100)
    args = parser.parse_args([])
    model = nn.Linear(8, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if mode == "single":
        logging.info("model has %d parameters", sum(p.numel() for p in model.parameters()))
        sched = build_scheduler(opt, args, total_steps=1000)
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        data = [{"input": torch.randn(8), "labels": i % 2} for i in range(64)]
        loader = torch.utils.data.DataLoader(data, batch_size=8, collate_fn=collate)
        logging.info("rank %d: %d batches per epoch", dist.get_rank(), len(loader))
        for batch in loader:
            loss = nn.functional.cross_entropy(model(batch["input"]), batch["label"])


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
