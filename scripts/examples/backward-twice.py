#!/usr/bin/env python
"""Real example logs for `backward-twice`.

Truncated BPTT: the LSTM hidden state is carried from one batch to the next without
.detach(), so step 2's backward walks into step 1's already-freed graph.
Run: .venv/bin/python scripts/examples/backward-twice.py
"""
ID = "backward-twice"
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

    class CharRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(64, 16)
            self.rnn = nn.LSTM(16, 32, batch_first=True)
            self.out = nn.Linear(32, 64)

        def forward(self, x, hidden=None):
            h, hidden = self.rnn(self.emb(x), hidden)
            return self.out(h), hidden

    model = CharRNN()
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    hidden = None
    print("training char-rnn: seq_len=35 batch=20 bptt=35", flush=True)
    for step in range(1, 4):
        x = torch.randint(0, 64, (20, 36))
        logits, hidden = model(x[:, :-1], hidden)   # BUG: hidden still attached to the previous graph
        loss = nn.functional.cross_entropy(logits.reshape(-1, 64), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"| epoch   1 | {step:5d}/  663 batches | lr 1.00e-03 | loss {loss.item():5.2f}", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
