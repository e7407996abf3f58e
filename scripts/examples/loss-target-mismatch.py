#!/usr/bin/env python
"""Real example logs for `loss-target-mismatch`.

positive-1: causal-LM logits flattened to (B*T, V) but labels left as (B,) class ids
("Expected input batch_size (240) to match target batch_size (16)").
positive-2 (torchrun): regression-style float labels passed to CrossEntropyLoss
("expected target dtype to be Long or Byte, but got Float" in this version).
Run: .venv/bin/python scripts/examples/loss-target-mismatch.py
"""
ID = "loss-target-mismatch"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "single":
        emb, head = nn.Embedding(100, 32), nn.Linear(32, 100)
        ids = torch.randint(0, 100, (16, 16))
        labels = torch.randint(0, 100, (16,))                   # BUG: one label per sequence
        logits = head(emb(ids[:, :-1]))                        # (16, 15, 100)
        print("Epoch 1/3:   0%|          | 0/125 [00:00<?, ?it/s]", flush=True)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 100), labels)
        loss.backward()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        model = nn.parallel.DistributedDataParallel(nn.Linear(20, 3))
        crit = nn.CrossEntropyLoss()
        x = torch.randn(32, 20)
        y = torch.tensor([0.0, 1.0, 2.0, 1.0] * 8)              # BUG: labels read as float
        print(f"[rank {dist.get_rank()}] batch x={tuple(x.shape)} y={tuple(y.shape)} {y.dtype}", flush=True)
        loss = crit(model(x), y)
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
