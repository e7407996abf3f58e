#!/usr/bin/env python
"""Real example logs for `embedding-index-out-of-range`.

A tokenizer gained special tokens (ids 1000..1003) but the model's embedding was
never resized, so the first batch containing one of them raises in F.embedding.
Run: .venv/bin/python scripts/examples/embedding-index-out-of-range.py
"""
ID = "embedding-index-out-of-range"
# --- runner: re-executes this file as the training script and saves its real output ---
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "src/traintriage/kb/examples" / ID
VENV_BIN = pathlib.Path(sys.executable).parent
# this CPU venv has no numpy; torch warns about it at import: not part of the failure
DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str, mode: str, nproc: int = 0, env: dict | None = None) -> str:
    """Run this file as /tmp/tt-job/<ID>/train.py (plain python, or torchrun --tee 3)."""
    work = pathlib.Path("/tmp/tt-job") / ID
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(__file__, work / "train.py")
    if nproc:
        cmd = [str(VENV_BIN / "torchrun"), f"--nproc-per-node={nproc}", "--tee=3",
               f"--master-port={_free_port()}", "train.py"]
    else:
        cmd = [sys.executable, "train.py"]
    full_env = dict(os.environ, TT_MODE=mode, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run(cmd, cwd=work, env=full_env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    text = "".join(l for l in proc.stdout.splitlines(keepends=True) if not DROP.search(l))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(text)
    print(f"{name}: exit {proc.returncode}, {len(text.splitlines())} lines")
    return text


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
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: an out-of-range *label* (not token id): loss-target-mismatch, not this entry
    run("negative-1.log", "negative")
