"""Notebook family: DataLoader / data pipeline problems in a Jupyter training notebook.
python nb_dataloader.py --fault {healthy,worker_error,spawn_lambda,collate,worker_killed,fds,interrupt} --out X.ipynb"""
import argparse, sys
sys.path.insert(0, "/work/rr77/ca/tools")
from nbmk import write_nb
ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="healthy"); ap.add_argument("--out", required=True)
ap.add_argument("--step", type=int, default=30); ap.add_argument("--workers", type=int, default=2)
a = ap.parse_args()

cells = []
cells.append("""
import os, time, json, random, warnings
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from tqdm.auto import tqdm
torch.manual_seed(0); random.seed(0); np.random.seed(0)
print("torch", torch.__version__, "| threads", torch.get_num_threads())
""")
# data prep cell: build a tiny labelled text dataset on disk
cells.append("""
os.makedirs("data_%s", exist_ok=True)
words = "the a cat dog sat ran on under mat log fast slow red blue".split()
labels = ["pos", "neg", "neutral"]
rows = []
for i in range(600):
    n = random.randint(4, 12)
    rows.append({"text": " ".join(random.choice(words) for _ in range(n)), "label": random.choice(labels)})
%s
with open("data_%s/train.jsonl", "w") as f:
    for r in rows: f.write(json.dumps(r) + "\\n")
vocab = {w: i + 2 for i, w in enumerate(words)}   # 0 pad, 1 unk
label2id = {"pos": 0, "neg": 1, "neutral": 2}
print(len(rows), "rows written, vocab", len(vocab) + 2)
""" % (a.fault,
       # worker_error: a few rows written by another labelling pass use a 4th label
       "for j in range(%d, 600, 97): rows[j]['label'] = 'mixed'" % (a.step * 8 + 3) if a.fault == "worker_error" else "",
       a.fault))

pad_collate = "collate_fn=pad_collate" if a.fault != "collate" else ""
cells.append("""
class JsonlTextDataset(Dataset):
    def __init__(self, path, max_len=16):
        self.path = path
        self.offsets = []
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)
        self.max_len = max_len
        self.fh = None
    def __len__(self):
        return len(self.offsets)
    def __getitem__(self, i):
        %s
        self.fh.seek(self.offsets[i])
        r = json.loads(self.fh.readline())
        ids = [vocab.get(w, 1) for w in r["text"].split()][: self.max_len]
        return torch.tensor(ids), torch.tensor(label2id[r["label"]])

def pad_collate(batch):
    xs, ys = zip(*batch)
    return nn.utils.rnn.pad_sequence(xs, batch_first=True), torch.stack(ys)

ds = JsonlTextDataset("data_%s/train.jsonl")
print(len(ds), ds[0])
%s
""" % ("self.fh = self.__dict__.setdefault('_handles', {}).setdefault(i, open(self.path, 'rb'))  # cache a handle per record" if a.fault == "fds"
       else "if self.fh is None: self.fh = open(self.path, 'rb')", a.fault,
       "" if a.fault == "fhrace" else "ds.fh = None  # workers open their own handle"))

cells.append("""
class BagClassifier(nn.Module):
    def __init__(self, vocab_size, dim=64, n_cls=3):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.ff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_cls))
    def forward(self, x):
        m = (x != 0).float().unsqueeze(-1)
        h = (self.emb(x) * m).sum(1) / m.sum(1).clamp(min=1)
        return self.ff(h)
model = BagClassifier(len(vocab) + 2)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=40, gamma=0.5)
print(sum(p.numel() for p in model.parameters()), "parameters")
""")

dl_kwargs = {
    "fhrace": "batch_size=16, shuffle=True, num_workers=4, collate_fn=pad_collate, persistent_workers=True",
    "healthy": "batch_size=16, shuffle=True, num_workers=4, collate_fn=pad_collate, persistent_workers=True",
    "worker_error": "batch_size=16, shuffle=False, num_workers=%d, collate_fn=pad_collate" % a.workers,
    "spawn_lambda": "batch_size=16, shuffle=True, num_workers=2, multiprocessing_context='spawn', collate_fn=lambda b: pad_collate(b)",
    "collate": "batch_size=16, shuffle=True, num_workers=2",
    "worker_killed": "batch_size=16, shuffle=True, num_workers=2, collate_fn=pad_collate",
    "fds": "batch_size=4, shuffle=True, num_workers=2, collate_fn=pad_collate, prefetch_factor=8",
    "interrupt": "batch_size=16, shuffle=True, num_workers=2, collate_fn=pad_collate",
}[a.fault]
cells.append("train_loader = DataLoader(ds, %s)\nprint(len(train_loader), 'batches per epoch')" % dl_kwargs)

pre = ""
if a.fault == "worker_killed":
    # the kernel's memory watchdog (a real OOM killer stand-in): kill one worker process with SIGKILL after a few seconds
    pre = """
import signal, threading, subprocess
def _oom_reaper():
    time.sleep(4)
    kids = subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split()
    if kids: os.kill(int(kids[-1]), signal.SIGKILL)
threading.Thread(target=_oom_reaper, daemon=True).start()
"""
if a.fault == "interrupt":
    # Jupyter's "Interrupt kernel" button sends SIGINT to the kernel process; do the same from outside the loop
    pre = """
import signal, threading
threading.Timer(6.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
"""
epochs = 3
slow = "time.sleep(0.03)" if a.fault in ("worker_killed", "interrupt") else ""
cells.append(pre + """
history = []
for epoch in range(%d):
    model.train()
    pbar = tqdm(train_loader, desc=f"epoch {epoch}")
    tot, n = 0.0, 0
    for step, (x, y) in enumerate(pbar):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        %s
        tot += loss.item(); n += 1
        pbar.set_postfix(loss=f"{tot/n:.4f}", lr=sched.get_last_lr()[0])
    history.append(tot / n)
    print(f"epoch {epoch}: train_loss={tot/n:.4f}")
""" % (epochs, slow))
cells.append("""
torch.save(model.state_dict(), "bag_%s.pt")
print("saved", history)
""" % a.fault)
write_nb(cells, a.out)
