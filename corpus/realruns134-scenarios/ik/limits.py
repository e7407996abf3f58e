"""Training loop that runs into host limits: a cache lock left behind by a killed
preprocessing job, the per-user process/thread limit, the CPU-time limit.
--mode prep | train ; --lock-timeout ; --workers"""
import argparse, logging, os, sys, time, threading
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from filelock import SoftFileLock, Timeout  # noqa: F401

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train")
p.add_argument("--cache-dir", default="cache")
p.add_argument("--lock-timeout", type=float, default=-1)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--width", type=int, default=64)
p.add_argument("--dist", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
log = logging.getLogger("train")


def preprocess():
    os.makedirs(args.cache_dir, exist_ok=True)
    lock = SoftFileLock(os.path.join(args.cache_dir, "features.lock"), timeout=args.lock_timeout)
    log.info("acquiring cache lock %s", lock.lock_file)
    with lock:
        path = os.path.join(args.cache_dir, "features.pt")
        if os.path.exists(path):
            log.info("feature cache hit")
            return torch.load(path)
        log.info("building feature cache ...")
        feats = []
        for i in range(40):
            feats.append(torch.randn(64, 32))
            time.sleep(0.5)  # tokenising / decoding
            if i % 10 == 0:
                log.info("  %d/40 chunks", i)
        feats = torch.cat(feats)
        torch.save(feats, path)
        return feats


def heartbeat(stop):
    while not stop.wait(2.0):
        log.info("heartbeat: alive")


def train():
    if args.dist:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    feats = preprocess()
    y = torch.randint(0, 4, (feats.shape[0],))
    dl = DataLoader(TensorDataset(feats, y), batch_size=16, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(32, args.width), nn.ReLU(), nn.Linear(args.width, args.width),
                          nn.ReLU(), nn.Linear(args.width, 4))
    if args.dist:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    stop = threading.Event()
    threading.Thread(target=heartbeat, args=(stop,), daemon=True).start()
    for ep in range(args.epochs):
        tot = 0.0
        for x, t in dl:
            loss = F.cross_entropy(model(x), t)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
        log.info("epoch %d loss %.4f", ep, tot / len(dl))
    stop.set()
    log.info("finished")


if __name__ == "__main__":
    if args.mode == "prep":
        preprocess()
    else:
        train()
