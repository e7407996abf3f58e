"""Bag-of-words classifier trained with accelerate; the vocabulary is built from the text files.

--vocab-from local  : (bug) each process builds the vocabulary from its own shard of the corpus
--vocab-from all    : vocabulary from the whole corpus (correct)
"""
import argparse, os, random
import torch, torch.nn as nn, torch.nn.functional as F
from accelerate import Accelerator

p = argparse.ArgumentParser()
p.add_argument("--vocab-from", default="all", choices=["all", "local"])
p.add_argument("--steps", type=int, default=20)
a = p.parse_args()

acc = Accelerator()
print(f"[proc {acc.process_index}] distributed_type={acc.distributed_type} num_processes={acc.num_processes}", flush=True)
random.seed(0)
words = [f"w{i}" for i in range(300)]
corpus = [" ".join(random.choices(words[: 150 + 150 * (i % 2)], k=20)) for i in range(400)]
labels = [i % 3 for i in range(400)]
local = corpus[acc.process_index::acc.num_processes]
src = local if a.vocab_from == "local" else corpus
vocab = {w: i for i, w in enumerate(sorted({w for line in src for w in line.split()}))}
print(f"[proc {acc.process_index}] vocabulary size {len(vocab)}", flush=True)

model = nn.EmbeddingBag(len(vocab), 32, mode="mean")
head = nn.Linear(32, 3)
net = nn.Sequential()
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.bag = model; s.head = head
    def forward(s, ids, off):
        return s.head(s.bag(ids, off))
net = M()
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
net, opt = acc.prepare(net, opt)
for step in range(a.steps):
    idx = random.sample(range(len(local)), 16)
    ids, off = [], []
    for j in idx:
        off.append(len(ids)); ids += [vocab.get(w, 0) for w in local[j].split()]
    y = torch.tensor([labels[acc.process_index + j * acc.num_processes] for j in idx])
    loss = F.cross_entropy(net(torch.tensor(ids), torch.tensor(off)), y)
    opt.zero_grad(); acc.backward(loss); opt.step()
    if step % 5 == 0:
        acc.print(f"step {step} loss {loss.item():.4f}")
acc.print("done")
