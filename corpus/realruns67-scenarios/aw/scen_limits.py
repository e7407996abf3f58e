"""Resource-limit family: the limit comes from the shell (ulimit -n/-s/-v, small /dev/shm, TMPDIR, locale);
the script is ordinary training code that happens to hit it."""
import argparse, os, sys, json, tempfile, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, make_model, batch, say, finish

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True, choices=["shards", "loader", "history", "bigbatch", "atomic-save", "unicode-log", "healthy"])
p.add_argument("--steps", type=int, default=30)
p.add_argument("--shards-per-rank", default="8,8")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--img", type=int, default=64)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--big-rank", type=int, default=1)
p.add_argument("--logging", action="store_true")
a = p.parse_args()
rank, world, log = setup(a.logging)
model = make_model(world)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
lossf = nn.CrossEntropyLoss()

class ShardSet(Dataset):
    """reads records from many small shard files; keeps handles in a cache (the bug: never evicted)"""
    def __init__(self, paths, per):
        self.paths = paths; self.per = per; self.handles = {}
    def __len__(self): return len(self.paths) * self.per
    def __getitem__(self, i):
        pth = self.paths[i // self.per]
        if pth not in self.handles:
            self.handles[pth] = open(pth, "rb")
        f = self.handles[pth]; f.seek((i % self.per) * 128)
        raw = torch.frombuffer(bytearray(f.read(128)), dtype=torch.float32)
        return raw[:32], int(raw[0].abs() * 10) % 4

class ImgSet(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, a.img, a.img, generator=g), i % 4

def step_on(x, y):
    if x.dim() > 2: x = x.flatten(1)[:, :32]
    loss = lossf(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    return loss.item()

if a.mode == "shards":
    n = int(a.shards_per_rank.split(",")[rank])
    d = f"data/shards/r{rank}"; os.makedirs(d, exist_ok=True)
    per = 480 // n
    paths = []
    for k in range(n):
        pth = f"{d}/part-{k:05d}.bin"
        if not os.path.exists(pth):
            torch.randn(per * 32).numpy().tofile(pth)
        paths.append(pth)
    say(rank, f"{len(paths)} shards, {len(paths)*per} records", log)
    ds = ShardSet(paths, per)
    dl = DataLoader(ds, batch_size=16, shuffle=False)
    for step, (x, y) in enumerate(dl):
        l = step_on(x, y)
        if step % 10 == 0: say(rank, f"step {step} loss {l:.4f} open_handles={len(ds.handles)}", log)
elif a.mode == "loader":
    dl = DataLoader(ImgSet(), batch_size=a.bs, num_workers=a.workers, shuffle=True, persistent_workers=False)
    for step, (x, y) in enumerate(dl):
        l = step_on(x, y)
        if step % 5 == 0: say(rank, f"step {step} loss {l:.4f} batch {tuple(x.shape)}", log)
        if step >= a.steps: break
elif a.mode == "history":
    # metric history kept as a nested linked structure ({"prev": {...}}) and saved in the checkpoint
    sys.setrecursionlimit(1_000_000)
    hist = None
    for step in range(a.steps):
        x, y = batch(step, rank); l = step_on(x, y)
        hist = {"step": step, "loss": l, "prev": hist}
        if step % 2000 == 0: say(rank, f"step {step} loss {l:.4f}", log)
    say(rank, "saving checkpoint with metric history", log)
    os.makedirs("out/hist", exist_ok=True)
    torch.save({"model": model.state_dict(), "history": hist}, f"out/hist/ckpt_rank{rank}.pt")
    say(rank, "saved", log)
elif a.mode == "bigbatch":
    for step in range(a.steps):
        bs = a.bs * (64 if (rank == a.big_rank and step >= 5) else 1)   # eval-sized batch on one rank
        x = torch.randn(bs, 32); y = torch.randint(0, 4, (bs,))
        feats = x.unsqueeze(1).expand(bs, 4096, 32).contiguous()     # augmented views
        l = step_on(feats.mean(1), y)
        say(rank, f"step {step} bs {bs} loss {l:.4f}", log)
elif a.mode == "atomic-save":
    os.makedirs("out/atomic", exist_ok=True)
    for step in range(a.steps):
        x, y = batch(step, rank); l = step_on(x, y)
        if step % 5 == 0: say(rank, f"step {step} loss {l:.4f}", log)
        if (step + 1) % 10 == 0 and rank == 0:
            with tempfile.NamedTemporaryFile(delete=False, suffix=".pt") as tmp:
                torch.save(model.state_dict(), tmp)
            os.replace(tmp.name, f"out/atomic/ckpt_{step+1}.pt")
            say(rank, f"checkpoint step {step+1} written", log)
elif a.mode in ("unicode-log", "healthy"):
    for step in range(a.steps):
        x, y = batch(step, rank); l = step_on(x, y)
        if step % 5 == 0:
            trend = "↓" if l < 1.2 else "→"
            say(rank, f"step {step} loss {l:.4f} {trend} (λ=0.05, ε=1e-8)", log)
say(rank, "done", log)
finish()
