"""Tiny text classifier that logs through rich's RichHandler with rich tracebacks.

--fault none | dtype | cfg_key | corrupt_ckpt | vocab
Runs single-process (python) or under torchrun (gloo, DDP).
"""
import argparse, datetime, logging, os, sys, time, warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress
from rich.traceback import install

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--resume", default="")
p.add_argument("--force-term", action="store_true")
p.add_argument("--width", type=int, default=110)
args = p.parse_args()

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))
console = Console(force_terminal=args.force_term, width=args.width, stderr=False)
install(console=console, show_locals=False, width=args.width)
logging.basicConfig(level="INFO", format=f"[rank{RANK}] %(message)s", datefmt="[%X]",
                    handlers=[RichHandler(console=console, rich_tracebacks=True, markup=False)])
logging.captureWarnings(True)
log = logging.getLogger("train")

CORPUS = ["the cat sat on the mat", "a dog ran in the park", "loss went down nicely",
          "gradients flow through layers", "tokens become vectors", "rank zero writes checkpoints"] * 20

CONFIG = {"lr": 3e-3, "batch_size": 8, "max_len": 24, "vocab_size": 40, "embed_dim": 32, "warmup_steps": 4}


class CharTokenizer:
    def __init__(self, texts, extra=""):
        chars = sorted(set("".join(texts)) | set(extra))
        self.stoi = {c: i + 1 for i, c in enumerate(chars)}  # 0 = pad

    def __len__(self):
        return len(self.stoi) + 1

    def encode(self, s, max_len):
        ids = [self.stoi[c] for c in s][:max_len]
        return ids + [0] * (max_len - len(ids))


class BagClassifier(nn.Module):
    def __init__(self, vocab, dim, n_cls=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.head = nn.Linear(dim, n_cls)

    def forward(self, ids):
        return self.head(self.emb(ids).mean(1))


def main():
    if WORLD > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    cfg = dict(CONFIG)
    if args.fault == "cfg_key":
        # config migrated to the new schema: warmup is now nested under "scheduler"
        cfg["scheduler"] = {"name": "linear", "warmup": cfg.pop("warmup_steps")}
    extra = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" if args.fault == "vocab" else ""
    tok = CharTokenizer(CORPUS, extra=extra)
    log.info("tokenizer vocab=%d, model vocab_size=%d", len(tok), cfg["vocab_size"])
    texts = CORPUS if args.fault != "vocab" else [t.upper() if i % 7 == 5 else t for i, t in enumerate(CORPUS)]
    ids = torch.tensor([tok.encode(t, cfg["max_len"]) for t in texts])
    labels = torch.tensor([i % 6 for i in range(len(texts))])
    model = BagClassifier(cfg["vocab_size"], cfg["embed_dim"])
    if args.resume:
        log.info("loading checkpoint %s", args.resume)
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])
    if WORLD > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg["warmup_steps"]))
    if args.fault == "none":
        sched.step()  # "prime" the scheduler (triggers torch's order warning)
    feats = None
    if args.fault == "dtype":
        # extra dense features precomputed with numpy
        feats = torch.from_numpy(np.random.default_rng(0).normal(size=(len(texts), cfg["embed_dim"])))
        proj = nn.Linear(cfg["embed_dim"], 6)
    bs = cfg["batch_size"]
    with Progress(console=console, transient=False) as prog:
        task = prog.add_task(f"rank{RANK} train", total=args.steps)
        for step in range(args.steps):
            sl = slice((step * bs + RANK * 3) % len(texts), (step * bs + RANK * 3) % len(texts) + bs)
            logits = model(ids[sl])
            if feats is not None:
                logits = logits + proj(feats[sl])
            loss = F.cross_entropy(logits, labels[sl])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if step % 4 == 0:
                log.info("step %d loss %.4f lr %.2e", step, loss.item(), sched.get_last_lr()[0])
            if args.fault == "none" and step == 10:
                log.warning("eval loader has 0 batches for split 'dev' (dataset too small for batch_size=%d); skipping eval", bs)
                log.error("could not update 'best' symlink: checkpoint not written yet at step %d", step)
            prog.advance(task)
            time.sleep(0.05)
    if RANK == 0:
        os.makedirs("/work/rr85/cz/tmp/ckpt", exist_ok=True)
        torch.save({"model": (model.module if WORLD > 1 else model).state_dict()}, "/work/rr85/cz/tmp/ckpt/rich-last.pt")
    log.info("done: final loss %.4f", loss.item())
    if WORLD > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        log.exception("run aborted")
        raise
