#!/usr/bin/env python
"""Real example logs for `multinomial-invalid-probability` (new entry).

Sampling from a model whose fp16 logits overflowed to inf (and NaN after softmax):
torch.multinomial rejects the probability tensor.
positive-1: a generation loop with temperature sampling; positive-2 (torchrun): an
RL-style rollout on two ranks.
Run: .venv/bin/python scripts/examples/multinomial-invalid-probability.py
"""
ID = "multinomial-invalid-probability"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode != "single":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    lm_head = nn.Linear(16, 50)
    with torch.no_grad():
        lm_head.weight[7] = 1e5                     # a diverged row: logits overflow fp16
    hidden = torch.randn(2, 16)
    out = []
    for t in range(8):
        logits = lm_head(hidden).half().float()     # model ran in fp16: 1e5 -> inf
        if t < 3:
            logits[:, 7] = 0.0
        probs = torch.softmax(logits / 0.7, dim=-1)
        tok = torch.multinomial(probs, num_samples=1)
        out.append(tok)
        print(f"generated token {t}: {tok.view(-1).tolist()}", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
