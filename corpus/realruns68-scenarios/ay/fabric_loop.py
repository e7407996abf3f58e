"""Lightning Fabric training-loop scenarios (CPU, gloo).

--launch torchrun : processes started externally (torchrun); Fabric picks up the env
--launch self     : Fabric(strategy="ddp", devices=N).launch() spawns the workers itself
--launch spawn    : Fabric(strategy="ddp_spawn") uses torch.multiprocessing start_processes
"""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.fabric.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--launch", default="torchrun")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--pylog", action="store_true")
p.add_argument("--save", default=None)
args = p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids, h=None):
        x = self.emb(ids)
        out, h = self.rnn(x, h)
        return self.head(out), h


def make_data(vocab, n=512, T=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (n, T + 1), generator=g)
    return TensorDataset(ids[:, :-1], ids[:, 1:])


def run(fabric):
    rank = fabric.global_rank
    logger = logging.getLogger(f"fabric.rank{rank}")
    say = logger.info if args.pylog else (lambda m: fabric.print(m) if rank == 0 else print(m, flush=True))
    fabric.seed_everything(1234)
    vocab = args.vocab
    model = TinyLM(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    if args.fault == "frozen_backbone":
        # freeze the backbone for linear probing ... but the head too, by a too-broad name filter
        for n, prm in model.named_parameters():
            if not n.startswith("lm_head."):
                prm.requires_grad_(False)
    model, opt = fabric.setup(model, opt)
    data_vocab = vocab
    if args.fault == "vocab_rank" and rank == args.rank:
        # this rank reads the shard tokenised with the newer tokenizer (extra special tokens)
        data_vocab = vocab + 8
    ds = make_data(data_vocab, seed=rank if args.fault == "vocab_rank" else 0)
    dl = fabric.setup_dataloaders(DataLoader(ds, batch_size=16, shuffle=True, drop_last=True))
    it = iter(dl)
    pbar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100)
    h = None
    t0 = time.time()
    for step in range(args.steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl)
            x, y = next(it)
        if args.fault == "loss_vec":
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1), reduction="none")
        elif args.fault == "carry_hidden":
            # truncated BPTT: carry hidden state over to the next batch (forgot .detach())
            logits, h = model(x, h)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        else:
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
            if args.fault == "inplace_clip" and step >= args.step:
                probs = logits.softmax(-1)
                probs.clamp_(min=1e-6)  # in-place clamp of softmax output needed by backward
                loss = loss + 0.01 * (-(probs.log()).mean())
        opt.zero_grad()
        fabric.backward(loss)
        opt.step()
        if pbar is not None:
            pbar.set_postfix(loss=f"{loss.item():.3f}")
            pbar.update(1)
        elif step % 5 == 0:
            say(f"[rank{rank}] step {step} loss {loss.item():.4f} ({time.time() - t0:.1f}s)")
    if pbar is not None:
        pbar.close()
    if args.save:
        fabric.save(args.save, {"model": model, "optimizer": opt, "step": args.steps})
    fabric.barrier()
    fabric.print(f"finished {args.steps} steps")


def main():
    if args.pylog:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s - %(message)s")
    if args.launch == "spawn":
        strategy = DDPStrategy(start_method="spawn", process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30))
    if args.devices == 1:
        strategy = "auto"
    fabric = L.Fabric(accelerator="cpu", devices=args.devices, strategy=strategy)
    fabric.launch(run)


if __name__ == "__main__":
    main()
