"""Character-level LSTM/GRU language model + sequence classifier on a synthetic corpus.

--fault: none | embed_oob | hidden_carry | collate | unused | onecycle | plateau | monitored
"""
import argparse
import os
import random
import sys
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
p.add_argument("--layers", type=int, default=1)
p.add_argument("--dropout", type=float, default=0.0)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bptt", type=int, default=35)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.manual_seed(1234)
torch.set_num_threads(1)
random.seed(rank)

# ---- tiny corpus + char vocabulary ----
words = ["the", "model", "learns", "to", "predict", "next", "character", "in", "a", "sequence",
         "recurrent", "networks", "remember", "state", "over", "time", "gradient", "clipping"]
rng = random.Random(0)
text = " ".join(rng.choice(words) for _ in range(6000))
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
vocab_size = len(chars)
if args.fault == "embed_oob":
    # later the corpus is extended with punctuation + uppercase from a second file,
    # but vocab_size was computed from the first file only
    extra = " The Model, Learns. Next! "
    for c in sorted(set(extra) - set(chars)):
        stoi[c] = len(stoi)
    text = text[:20000] + extra * 40 + text[20000:]
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
if rank == 0:
    print(f"corpus: {len(text)} chars, vocab_size={vocab_size}", flush=True)


class CharRNN(nn.Module):
    def __init__(self, vocab, emb=32, hid=64, layers=1, dropout=0.0, cell="lstm", aux_task=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        rnn_cls = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn_cls(emb, hid, num_layers=layers, dropout=dropout, batch_first=True)
        self.head = nn.Linear(hid, vocab)
        if aux_task:
            self.aux_head = nn.Linear(hid, 2)  # "is next char a space" auxiliary task

    def forward(self, x, hidden=None, aux=False):
        e = self.embed(x)
        out, hidden = self.rnn(e, hidden)
        logits = self.head(out)
        if aux:
            return logits, self.aux_head(out), hidden
        return logits, hidden


class SeqDataset(Dataset):
    """Sentences of variable length for the classification variant."""

    def __init__(self, n=512):
        r = random.Random(5)
        self.items = []
        for _ in range(n):
            L = r.randint(5, 12)
            s = " ".join(r.choice(words) for _ in range(L))
            self.items.append(s)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        s = self.items[i]
        ids = torch.tensor([stoi[c] for c in s], dtype=torch.long)
        return ids[:-1], ids[1:]


model = CharRNN(vocab_size, layers=args.layers, dropout=args.dropout, cell=args.cell,
                aux_task=args.fault == "unused")
if distributed:
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
crit = nn.CrossEntropyLoss()

steps_per_epoch = 12
if args.fault == "onecycle":
    # total steps computed from the number of batches of ONE epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=steps_per_epoch)
elif args.fault == "plateau":
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
else:
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps_per_epoch)

if args.fault == "collate":
    ds = SeqDataset()
    sampler = DistributedSampler(ds) if distributed else None
    loader = DataLoader(ds, batch_size=args.bs, shuffle=sampler is None, sampler=sampler,
                        num_workers=args.workers)
else:
    # contiguous streams per rank, TBPTT style
    per_rank = data.numel() // world
    stream = data[rank * per_rank:(rank + 1) * per_rank]
    nb = stream.numel() // args.bs
    stream = stream[: nb * args.bs].view(args.bs, nb)

    def tbptt_batches():
        for i in range(0, stream.size(1) - 1 - args.bptt, args.bptt):
            yield stream[:, i:i + args.bptt], stream[:, i + 1:i + 1 + args.bptt]
    loader = None

if args.tqdm:
    from tqdm import tqdm
else:
    tqdm = None

global_step = 0
for epoch in range(args.epochs):
    model.train()
    hidden = None
    total = 0.0
    it = loader if loader is not None else tbptt_batches()
    if tqdm is not None and rank == 0:
        it = tqdm(it, total=steps_per_epoch, desc=f"epoch {epoch}", file=sys.stdout, mininterval=0)
    for i, (x, y) in enumerate(it):
        if i >= steps_per_epoch:
            break
        if args.fault == "hidden_carry":
            logits, hidden = model(x, hidden)          # hidden carried over from last batch
        elif args.fault == "unused":
            use_aux = global_step % 3 == 0
            if use_aux:
                logits, aux_logits, hidden = model(x, aux=True)
            else:
                logits, hidden = model(x)
        else:
            hidden = tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) else (
                hidden.detach() if hidden is not None else None)
            if args.fault == "collate":
                hidden = None
            logits, hidden = model(x, hidden)
        loss = crit(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        if args.fault == "unused" and use_aux:
            loss = loss + 0.1 * crit(aux_logits.reshape(-1, 2), (y == stoi[" "]).long().reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if args.fault != "plateau":
            sched.step()
        else:
            sched.step()
        total += loss.item()
        if tqdm is not None and rank == 0:
            it.set_postfix(loss=f"{loss.item():.3f}", ppl=f"{torch.exp(loss).item():.1f}")
        elif i % 4 == 0:
            print(f"[rank {rank}] epoch {epoch} it {i} loss {loss.item():.4f} "
                  f"ppl {torch.exp(loss).item():.2f}", flush=True)
        global_step += 1
        if args.fault == "monitored" and rank == args.fault_rank and i == args.fault_step and epoch == 0:
            # rank 1 recomputes validation perplexity over its whole shard every N steps (slow)
            with torch.no_grad():
                m = model.module if distributed else model
                h = None
                for _ in range(8000):
                    _, h = m(stream[:, :args.bptt], h)
        if args.fault == "monitored" and i % 4 == 3:
            # make sure all ranks are in step before the periodic sync of metrics
            dist.monitored_barrier(timeout=timedelta(seconds=5))
            t = torch.tensor([loss.item()])
            dist.all_reduce(t)
            if rank == 0:
                print(f"[rank 0] synced mean loss {t.item()/world:.4f}", flush=True)
    if tqdm is not None and rank == 0:
        it.close()
    print(f"[rank {rank}] epoch {epoch} mean loss {total/steps_per_epoch:.4f}", flush=True)

if distributed:
    dist.destroy_process_group()
print(f"[rank {rank}] done", flush=True)
