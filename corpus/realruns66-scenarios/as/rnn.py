"""LSTM/GRU models on synthetic token sequences: a char-level LM with truncated BPTT and a
sequence classifier with packed padded sequences.  Single process or DDP under torchrun.
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

p = argparse.ArgumentParser()
p.add_argument("--task", default="lm", choices=["lm", "cls"])
p.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
p.add_argument("--fault", default="none",
               choices=["none", "no-detach", "inplace-hidden", "vocab-off-by-one", "view-noncontig",
                        "reduction-none", "pack-unsorted", "noisy"])
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
args = p.parse_args()

distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.manual_seed(0 + rank)
torch.set_num_threads(1)

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)-7s [rank {rank}] %(message)s")
log = logging.getLogger("rnn")


def say(msg):
    if args.logfmt == "logging":
        log.info(msg)
    elif args.logfmt == "tqdm":
        from tqdm import tqdm
        tqdm.write(msg)
    else:
        print(f"[rank{rank}] {msg}" if distributed else msg, flush=True)


def on(step):
    return args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank) and step >= args.fault_step


# ---- a tiny "corpus": characters of a repeated text, vocab built from it ----
text = ("the quick brown fox jumps over the lazy dog. " * 200)
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
VOCAB = len(chars)
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)


class CharLM(nn.Module):
    def __init__(self, vocab, emb=32, hid=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        rnn_cls = nn.LSTM if args.cell == "lstm" else nn.GRU
        drop = 0.2 if args.fault == "noisy" else 0.0
        self.rnn = rnn_cls(emb, hid, batch_first=True, dropout=drop)
        self.head = nn.Linear(hid, vocab)

        self.mask_bos = False

    def forward(self, x, h=None):
        out, h = self.rnn(self.emb(x), h)
        out = torch.tanh(out)
        if self.mask_bos:
            # zero the features at positions right after a sentence end ('.'), written in place
            out[x == 1] = 0.0
        return self.head(out), h


class SeqClassifier(nn.Module):
    def __init__(self, vocab, emb=32, hid=48, ncls=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        rnn_cls = nn.LSTM if args.cell == "lstm" else nn.GRU
        self.rnn = rnn_cls(emb, hid, batch_first=True)
        self.head = nn.Linear(hid, ncls)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(self.emb(x), lengths, batch_first=True)
        out, h = self.rnn(packed)
        if isinstance(h, tuple):
            h = h[0]
        return self.head(h[-1])


def wrap(m):
    return nn.parallel.DistributedDataParallel(m) if distributed else m


t0 = time.time()
if args.task == "lm":
    vocab = VOCAB - 1 if on(0) and args.fault == "vocab-off-by-one" else VOCAB
    # ^ bug: vocab size taken as max id instead of max id + 1
    model = wrap(CharLM(vocab))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    B, T = 8, 32
    say(f"vocab={VOCAB} corpus_chars={len(text)} model_vocab={vocab} cell={args.cell}")
    h = None
    pos = rank * 1000
    rng = range(args.steps)
    if args.logfmt == "tqdm":
        from tqdm import tqdm
        rng = tqdm(rng, desc=f"rank{rank} train", mininterval=0, ncols=90, file=sys.stdout)
    for step in rng:
        if pos + B * T + 1 >= len(data):
            pos = 0
        chunk = data[pos:pos + B * T + 1]
        x = chunk[:-1].view(B, T)
        y = chunk[1:].view(B, T)
        pos += B * T
        if args.fault == "inplace-hidden" and on(step):
            (model.module if distributed else model).mask_bos = True
        logits, h = model(x, h)
        if args.fault == "no-detach" and on(step):
            # hidden state carried across batches without .detach() (truncated BPTT bug)
            pass
        else:
            h = tuple(t.detach() for t in h) if isinstance(h, tuple) else h.detach()
        if args.fault == "view-noncontig" and on(step):
            logits = logits.transpose(0, 1)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.transpose(0, 1).view(-1))
        elif args.fault == "reduction-none" and on(step):
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="none")
        else:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if args.logfmt == "tqdm":
            rng.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 5 == 0:
            say(f"step {step:3d} loss {loss.item():.4f} ppl {torch.exp(loss).item():.2f}")
else:
    # classification of variable-length sequences (sentiment-like, 3 classes)
    g = torch.Generator().manual_seed(7 + rank)
    model = wrap(SeqClassifier(VOCAB + 1))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    say(f"seq classifier cell={args.cell}")
    for step in range(args.steps):
        lengths = torch.randint(3, 20, (8,), generator=g)
        if not (args.fault == "pack-unsorted" and on(step)):
            lengths, _ = lengths.sort(descending=True)
        x = torch.zeros(8, int(lengths.max()), dtype=torch.long)
        for i, L in enumerate(lengths):
            x[i, :L] = torch.randint(1, VOCAB + 1, (int(L),), generator=g)
        y = (x.sum(1) % 3)
        logits = model(x, lengths)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            say(f"step {step:3d} loss {loss.item():.4f}")

say(f"done in {time.time() - t0:.1f}s")
if distributed:
    dist.barrier()
    dist.destroy_process_group()
