"""Accelerate training loop with a per-process sample cache ("decode once, keep in RAM"): the cache holds Python
lists and is never bounded. --cache-rank R enables the cache on that process only (e.g. after a config change);
--as-headroom-mb M caps that process's address space (RLIMIT_AS = VmSize + M), like a per-job memory limit."""
import argparse, resource, os
from datetime import timedelta
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from accelerate import Accelerator, InitProcessGroupKwargs

p = argparse.ArgumentParser()
p.add_argument("--cache-rank", type=int, default=1)
p.add_argument("--as-headroom-mb", type=int, default=250)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()
acc = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")

class Audio(Dataset):
    def __init__(s): s.cache = {}
    def __len__(s): return 1024
    def __getitem__(s, i):
        if i in s.cache: x = torch.tensor(s.cache[i])
        else:
            g = torch.Generator().manual_seed(i); x = torch.randn(40000, generator=g)
            if acc.process_index == args.cache_rank:
                s.cache[i] = x.tolist()   # python floats: ~32 bytes each instead of 4
        return x[:256], i % 4

def vm():
    return int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) // 1024

model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
opt = torch.optim.AdamW(model.parameters(), 1e-3)
dl = DataLoader(Audio(), batch_size=32, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
if acc.process_index == args.cache_rank and args.as_headroom_mb:
    lim = (vm() + args.as_headroom_mb) << 20; resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
for ep in range(args.epochs):
    for step, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        acc.backward(loss); opt.step(); opt.zero_grad()
        if step % 4 == 0:
            print(f"[proc {acc.process_index}] epoch {ep} step {step} loss {loss.item():.4f} rss/vm {vm()} MB", flush=True)
acc.wait_for_everyone()
acc.print("finished")
