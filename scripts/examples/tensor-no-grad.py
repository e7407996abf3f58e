#!/usr/bin/env python
"""Real example logs for `tensor-no-grad`.

The whole model was frozen for LoRA-style fine-tuning (requires_grad_(False)) but
no adapter/head was left trainable, so the loss has no grad_fn.
positive-2: the loss is computed under torch.no_grad() left over from an eval helper.
Run: .venv/bin/python scripts/examples/tensor-no-grad.py
"""
ID = "tensor-no-grad"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 2))
    if not ddp:
        for p in model.parameters():
            p.requires_grad_(False)              # BUG: froze the head too
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        print(f"trainable params: {trainable} || all params: {total} || trainable%: {100 * trainable / total:.4f}", flush=True)
        opt = torch.optim.AdamW([p for p in model.parameters()], lr=1e-4)
        x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    else:
        model = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step in range(1, 3):
            x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
            with torch.no_grad():                # BUG: copied from the evaluation loop
                logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            print(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.0001, 'epoch': 0.0{step}}}", flush=True)
            loss.backward()
            opt.step()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
