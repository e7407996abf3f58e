"""Single-process (or torchrun) toy text-classifier trainer logging with loguru and tqdm."""
import argparse, faulthandler, json, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
from loguru import logger
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

faulthandler.enable()
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "nan", "oom", "worker", "collate", "onecycle", "hang", "stall", "cholesky"])
p.add_argument("--data", default="data/train_tokens.jsonl")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--max-len", type=int, default=24)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--dist", action="store_true")
p.add_argument("--vocab", type=int, default=1000)
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--watchdog", type=float, default=0.0, help="dump all stacks if a step takes longer than this")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
logger.remove()
logger.add(sys.stderr, level="INFO",
           format="<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | rank{extra[rank]} | "
                  "<cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - <level>{message}</level>",
           colorize=False, backtrace=True, diagnose=False)
logger = logger.bind(rank=rank)
if args.dist:
    torch.distributed.init_process_group("gloo", timeout=timedelta(seconds=25))

LABELS = {"neg": 0, "neu": 1, "pos": 2}


class JsonlTokens(Dataset):
    def __init__(self, path, max_len, pad=True):
        with open(path) as f:
            self.rows = [json.loads(l) for l in f]
        self.max_len, self.pad = max_len, pad

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        ids = r["ids"][: self.max_len]
        if self.pad:
            ids = ids + [0] * (self.max_len - len(ids))
        return torch.tensor(ids), LABELS[r["label"]]


class BagModel(nn.Module):
    def __init__(self, vocab, hidden, n_cls=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_cls))

    def forward(self, ids):
        return self.mlp(self.emb(ids).mean(1))


@logger.catch(reraise=True)
def main():
    logger.info(f"args: {vars(args)}")
    ds = JsonlTokens(args.data, args.max_len, pad=(args.fault != "collate"))
    logger.info(f"loaded {len(ds)} rows from {args.data}")
    vocab = args.vocab
    n_long = sum(len(r["ids"]) > args.max_len for r in ds.rows)
    if n_long:
        logger.warning(f"{n_long} rows longer than max_len={args.max_len} will be truncated")
    if args.fault == "oom":
        vocab = 50_000_000  # vocab size read from a tokenizer config with a stray extra zeros
        logger.info(f"tokenizer vocab_size={vocab}")
    model = BagModel(vocab, args.hidden)
    if args.dist:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dl = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                    persistent_workers=False)
    total = len(dl) * args.epochs
    if args.fault == "onecycle":
        total = len(ds) // args.batch * args.epochs  # forgot the last partial batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=total)
    step = 0
    for epoch in range(args.epochs):
        pbar = tqdm(dl, desc=f"epoch {epoch}", file=sys.stderr, mininterval=0, ncols=100, disable=rank != 0)
        for ids, y in pbar:
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits, y)
            if args.fault == "cholesky" and step == 6:
                # whitening regulariser on the embedding covariance
                e = model.emb.weight[:32].T
                cov = e @ e.T / e.shape[1]
                L = torch.linalg.cholesky(cov)
                loss = loss + 1e-4 * L.diagonal().log().sum()
            loss_value = loss.item()
            if not np.isfinite(loss_value):
                logger.error(f"Loss is {loss_value}, stopping training")
                sys.exit(1)
            opt.zero_grad(); loss.backward()
            if args.clip:
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                if gn > 4 * args.clip:
                    logger.warning(f"step {step}: grad norm {gn:.2f} >> clip {args.clip}, clipped")
            opt.step(); sched.step()
            if args.fault == "hang" and step == 5:
                logger.info("saving async snapshot")
                os.pause() if rank == 1 else None
            if args.fault == "stall" and step == 5 and rank == 1:
                logger.info("waiting for snapshot lock release")
                while not os.path.exists("snapshot.lock.released"):   # nobody ever releases it
                    time.sleep(0.5)
            step += 1
            if args.watchdog:
                faulthandler.dump_traceback_later(args.watchdog, repeat=False, exit=False)
            pbar.set_postfix(loss=f"{loss_value:.4f}", lr=f"{sched.get_last_lr()[0]:.2e}")
            if step % 5 == 0:
                logger.info(f"epoch {epoch} step {step} loss {loss_value:.4f}")
            if args.dist:
                torch.distributed.barrier()
        pbar.close()
    logger.success("finished training")


if __name__ == "__main__":
    main()
