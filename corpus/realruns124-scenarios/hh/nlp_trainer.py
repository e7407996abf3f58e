#!/usr/bin/env python
"""Text classification trainer: tiny GPT-2 + locally built WordLevel tokenizer.

  python nlp_trainer.py --config configs/textcls_tiny.yaml --opt tokenizer.num_words=200
"""
import argparse
import datetime
import logging
import os
import random
import sys

import torch
import torch.distributed as dist
import yaml
from sklearn.metrics import accuracy_score, classification_report
from tokenizers import Tokenizer, models, pre_tokenizers
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import (GPT2Config, GPT2ForSequenceClassification, PreTrainedTokenizerFast,
                          get_linear_schedule_with_warmup)

logger = logging.getLogger("textcls")


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--opt", nargs="*", default=[])
    p.add_argument("--progress", action="store_true")
    p.add_argument("--export", default=None, help="save the trained model with save_pretrained")
    p.add_argument("--pg-timeout", type=int, default=30)
    return p.parse_args()


def load_cfg(args):
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    for o in args.opt:
        k, v = o.split("=", 1)
        node = cfg
        ks = k.split(".")
        for kk in ks[:-1]:
            node = node[kk]
        node[ks[-1]] = yaml.safe_load(v)
    return cfg


def build_tokenizer(tcfg):
    specials = ["[UNK]", "[BOS]", "[EOS]"]
    if tcfg.get("pad_token"):
        specials = [tcfg["pad_token"]] + specials
    vocab = {t: i for i, t in enumerate(specials)}
    for w in range(tcfg["num_words"]):
        vocab[f"w{w}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    kw = dict(unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if tcfg.get("pad_token"):
        kw["pad_token"] = tcfg["pad_token"]
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=tcfg["max_length"], **kw)


def make_split(n, cfg, seed):
    rnd = random.Random(seed)
    nw = cfg["tokenizer"]["num_words"]
    k = cfg["model"]["num_labels"]
    out = []
    for _ in range(n):
        L = rnd.randint(cfg["data"]["min_len"], cfg["data"]["max_len"])
        ids = [rnd.randrange(nw) for _ in range(L)]
        label = sum(1 for i in ids if i % 7 == 0) % k
        out.append({"text": " ".join(f"w{i}" for i in ids), "label": label})
    return out


class Trainer:
    def __init__(self, cfg, args, rank, world):
        self.cfg, self.args, self.rank, self.world = cfg, args, rank, world
        torch.manual_seed(cfg["seed"])
        self.tok = build_tokenizer(cfg["tokenizer"])
        m = cfg["model"]
        if m.get("init_from"):
            self.model = GPT2ForSequenceClassification.from_pretrained(m["init_from"], num_labels=m["num_labels"])
        else:
            mc = GPT2Config(vocab_size=m["vocab_size"], n_layer=m["n_layer"], n_embd=m["n_embd"],
                            n_head=m["n_head"], n_positions=m["n_positions"], num_labels=m["num_labels"],
                            pad_token_id=self.tok.pad_token_id)
            self.model = GPT2ForSequenceClassification(mc)
        if world > 1:
            self.model = torch.nn.parallel.DistributedDataParallel(self.model)
        self.train = make_split(cfg["data"]["num_train"], cfg, cfg["seed"])
        self.val = make_split(cfg["data"]["num_val"], cfg, cfg["seed"] + 1)
        t = cfg["train"]
        self.sampler = DistributedSampler(self.train) if world > 1 else None
        self.loader = DataLoader(self.train, batch_size=t["batch_size"], sampler=self.sampler,
                                 shuffle=self.sampler is None, collate_fn=self.collate, drop_last=True)
        vs = DistributedSampler(self.val, shuffle=False) if world > 1 else None
        self.val_loader = DataLoader(self.val, batch_size=32, sampler=vs, collate_fn=self.collate)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=t["lr"])
        total = t["epochs"] * len(self.loader)
        self.sched = get_linear_schedule_with_warmup(self.opt, t["warmup_steps"], total)
        self.step = 0

    def collate(self, batch):
        tc = self.cfg["tokenizer"]
        enc = self.tok([b["text"] for b in batch], padding=tc["padding"], truncation=True,
                       max_length=tc["max_length"], return_tensors="pt")
        enc["labels"] = torch.tensor([b["label"] for b in batch])
        return enc

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        preds, labels = [], []
        for b in self.val_loader:
            out = self.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"])
            preds += out.logits.argmax(-1).tolist()
            labels += b["labels"].tolist()
        acc = accuracy_score(labels, preds)
        if self.world > 1:
            t = torch.tensor([acc])
            dist.all_reduce(t)
            acc = t.item() / self.world
        if self.cfg["eval"].get("report") and self.rank == 0:
            names = [f"class_{i}" for i in range(self.model.config.num_labels)]
            logger.info("\n" + classification_report(labels, preds, target_names=names, zero_division=0))
        self.model.train()
        return acc

    def fit(self):
        t = self.cfg["train"]
        logger.info(f"vocab={len(self.tok)} train={len(self.train)} val={len(self.val)} world={self.world} "
                    f"steps/epoch={len(self.loader)}")
        for ep in range(t["epochs"]):
            if self.sampler:
                self.sampler.set_epoch(ep)
            it = self.loader
            if self.args.progress and self.rank == 0:
                from tqdm.auto import tqdm
                it = tqdm(it, desc=f"train ep{ep}", ncols=100)
            for b in it:
                out = self.model(**b)
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.opt.step()
                self.sched.step()
                self.opt.zero_grad()
                self.step += 1
                if self.step % 4 == 0:
                    logger.info(f"ep {ep} step {self.step} loss {out.loss.item():.4f} lr {self.sched.get_last_lr()[0]:.2e}")
                if self.step % t["eval_every"] == 0:
                    logger.info(f"step {self.step} val_acc {self.evaluate():.4f}")
        logger.info("done")


def main():
    args = get_args()
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s - %(levelname)s - %(name)s - [rank {rank}] %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S")
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    cfg = load_cfg(args)
    torch.set_num_threads(1)
    tr = Trainer(cfg, args, rank, world)
    tr.fit()
    if args.export and rank == 0:
        m = tr.model.module if world > 1 else tr.model
        m.save_pretrained(args.export)
        tr.tok.save_pretrained(args.export)
        logger.info(f"exported to {args.export}")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
