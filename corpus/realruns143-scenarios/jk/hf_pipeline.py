"""HF datasets + locally trained tokenizer + tiny GPT-2 (from config) fine-tune; --fault picks a pipeline bug.

Runs under torchrun (gloo) or plain python.
"""
import argparse
import json
import logging
import os
import random
import sys
import time
from datetime import timedelta

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--workdir", default="/work/rr143/jk/data/hf")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--vocab", type=int, default=600)
p.add_argument("--model-vocab", type=int, default=0)
p.add_argument("--maxlen", type=int, default=48)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s - %(levelname)s - %(name)s - [rank {rank}] %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S")
log = logging.getLogger("finetune")

import datasets
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, DataCollatorForLanguageModeling
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

WORDS = ("the model data loss batch token shard worker rank step epoch gradient tensor queue node train eval "
         "sample cache file stream parse label vector layer").split()


def make_corpus(wd):
    os.makedirs(wd, exist_ok=True)
    rnd = random.Random(0)
    for part in range(2):
        fn = os.path.join(wd, f"train-{part}.jsonl")
        if os.path.exists(fn):
            continue
        with open(fn, "w") as f:
            for i in range(300):
                n = rnd.randint(5, 60)
                words = [rnd.choice(WORDS) + (str(rnd.randint(0, 40)) if rnd.random() < 0.5 else "") for _ in range(n)]
                rec = {"text": " ".join(words), "source": "crawl", "id": part * 1000 + i}
                f.write(json.dumps(rec) + "\n")
    return [os.path.join(wd, f"train-{k}.jsonl") for k in range(2)]


def build_tokenizer(files, with_pad=True):
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["[UNK]", "[BOS]", "[EOS]"] + (["[PAD]"] if with_pad else [])
    tr = trainers.WordLevelTrainer(vocab_size=args.vocab, special_tokens=special)

    def it():
        for fn in files:
            with open(fn) as f:
                for line in f:
                    yield json.loads(line)["text"]

    tok.train_from_iterator(it(), tr)
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]",
              model_max_length=args.maxlen)
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def main():
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log.info("transformers %s, datasets %s, torch %s", transformers.__version__, datasets.__version__,
             torch.__version__)
    files = make_corpus(args.workdir)
    if args.fault == "schema_drift" and rank == 0:
        # a second export appended with the id column as string and an extra nested field
        fn = os.path.join(args.workdir, "train-2.jsonl")
        with open(fn, "w") as f:
            for i in range(50):
                f.write(json.dumps({"text": "late shard " + str(i), "source": "crawl",
                                    "id": f"x-{i}", "meta": {"lang": "en"}}) + "\n")
    if args.fault == "schema_drift":
        files = files + [os.path.join(args.workdir, "train-2.jsonl")]
        if world > 1:
            dist.barrier()
    tok = build_tokenizer(files, with_pad=(args.fault != "nopad"))
    log.info("tokenizer vocab size %d, pad token %s", len(tok), tok.pad_token)
    cache = os.environ.get("HF_DATASETS_CACHE")
    raw = datasets.load_dataset("json", data_files={"train": files}, split="train", cache_dir=cache)
    log.info("loaded %d rows with columns %s", len(raw), raw.column_names)

    if args.fault == "lenstats":
        lens = [len(tok(t)["input_ids"]) for t in raw["text"][:200]]
        log.info("token length stats: mean %.1f max %d (model_max_length %d)", sum(lens) / len(lens), max(lens),
                 tok.model_max_length)

    def tokenize(batch):
        enc = tok(batch["text"], truncation=(args.fault != "notrunc"), max_length=args.maxlen)
        if args.fault == "maplen":
            # drop empty / very short docs inside the batched map (but keep the other columns as they are)
            keep = [i for i, ids in enumerate(enc["input_ids"]) if len(ids) >= 12]
            enc = {k: [v[i] for i in keep] for k, v in enc.items()}
        return enc

    tokd = raw.map(tokenize, batched=True, batch_size=100, desc="Tokenizing")
    tokd = tokd.remove_columns([c for c in raw.column_names if c in tokd.column_names])
    if args.fault == "nopad":
        collate = lambda feats: tok.pad(feats, return_tensors="pt")  # noqa: E731
    else:
        mlm = DataCollatorForLanguageModeling(tok, mlm=False)
        collate = mlm
    sampler = DistributedSampler(tokd, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    dl = DataLoader(tokd, batch_size=args.bs, sampler=sampler, shuffle=sampler is None,
                    collate_fn=collate, num_workers=args.workers)
    cfg = GPT2Config(vocab_size=args.model_vocab or len(tok), n_positions=64, n_layer=2, n_head=2, n_embd=64,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("***** Running training *****  num examples = %d, batch size = %d, world = %d",
             len(tokd), args.bs, world)
    step = 0
    it = dl
    if args.tqdm and rank == 0:
        from tqdm.auto import tqdm
        it = tqdm(dl, total=min(args.steps, len(dl)), ncols=100)
    for batch in it:
        if "labels" not in batch:
            batch["labels"] = batch["input_ids"].clone()
        out = model(**{k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "labels")})
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        step += 1
        if step % 4 == 0:
            msg = {"loss": round(out.loss.item(), 4), "learning_rate": 1e-3, "epoch": round(step / len(dl), 2)}
            if args.tqdm and rank == 0:
                it.write(str(msg))
            else:
                log.info(str(msg))
        if step >= args.steps:
            break
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log.info("train_runtime done, %d steps", step)


if __name__ == "__main__":
    main()
