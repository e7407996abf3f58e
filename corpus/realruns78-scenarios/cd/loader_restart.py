"""Training with a multi-worker DataLoader; at --kill-step a worker process is SIGKILLed
(as the host OOM killer does). With --restart-on-worker-death the training code catches the
failure, rebuilds the loader and continues from the next unseen sample.
"""
import argparse, logging, os, signal, sys, time, threading
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--kill-step", type=int, default=15)
p.add_argument("--restart-on-worker-death", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
log = logging.getLogger("train")


class TokenShards(Dataset):
    def __init__(self, n=4096):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        time.sleep(0.01)  # decode cost
        x = torch.randn(64, generator=g)
        return x, (x.sum() > 0).long()


def make_loader(start):
    ds = torch.utils.data.Subset(TokenShards(), range(start, 4096))
    return DataLoader(ds, batch_size=16, num_workers=args.workers, prefetch_factor=2,
                      persistent_workers=False)


model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
seen = 0
loader = make_loader(seen)
it = iter(loader)
bar = None
if args.tqdm:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, ncols=100, desc="epoch 0")
restarts = 0
step = 0
while step < args.steps:
    try:
        if step == args.kill_step and restarts == 0 and not getattr(it, "_killed", False):
            victim = it._workers[0].pid
            it._killed = True
            os.kill(victim, signal.SIGKILL)  # what the kernel OOM killer does to the biggest worker
            time.sleep(0.5)
        x, y = next(it)
    except RuntimeError as e:
        if not args.restart_on_worker_death or "DataLoader worker" not in str(e) or restarts >= 3:
            raise
        restarts += 1
        log.exception("DataLoader worker died at step %d (restart %d/3); rebuilding loader from sample %d",
                      step, restarts, seen)
        del it, loader
        loader = make_loader(seen)
        it = iter(loader)
        continue
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    seen += len(y); step += 1
    if bar is not None:
        bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
    elif step % 5 == 0:
        log.info("step %d loss %.4f samples %d", step, loss.item(), seen)
if bar is not None:
    bar.close()
log.info("done: %d steps, %d loader restarts", args.steps, restarts)
