#!/usr/bin/env python
"""Real example logs for `embedding-index-out-of-range`.

A tokenizer gained special tokens (ids 1000..1003) but the model's embedding was
never resized, so the first batch containing one of them raises in F.embedding.
Run: .venv/bin/python scripts/examples/embedding-index-out-of-range.py
"""
ID = "embedding-index-out-of-range"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import logging

    import torch
    import torch.nn as nn

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    log = logging.getLogger("train")
    if mode == "negative":
        head = nn.Linear(16, 1000)
        print("intent classifier: 1000 labels in label map", flush=True)
        labels = torch.randint(0, 1000, (8,))
        labels[2] = 1003                                  # a label added to the data but not the head
        nn.functional.cross_entropy(head(torch.randn(8, 16)), labels).backward()
        return
    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
    else:
        rank = 0
    torch.manual_seed(rank)
    vocab_size = 1000          # base tokenizer
    added_tokens = 4           # <|im_start|> <|im_end|> <pad> <tool> added later
    log.info("Added %d special tokens to the tokenizer; tokenizer size is now %d", added_tokens, vocab_size + added_tokens)

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab_size, 32)   # BUG: not resized to len(tokenizer)
            self.block = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
            self.lm_head = nn.Linear(32, vocab_size)

        def forward(self, input_ids):
            return self.lm_head(self.block(self.embed_tokens(input_ids)))

    model = TinyLM()
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    log.info("***** Running training *****  Num examples = 2048, batch size = 8")
    for step in range(1, 40):
        ids = torch.randint(0, vocab_size, (8, 16))
        if step == (23 if rank == 1 or not ddp else 30):
            ids[3, 5] = vocab_size + 1      # a chat-template token appears in the batch
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab_size), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 5 == 0:
            print(f"step {step:>4} | loss {loss.item():.4f} | lr 3.00e-04", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: an out-of-range *label* (not token id): loss-target-mismatch, not this entry
    run("negative-1.log", "negative")
