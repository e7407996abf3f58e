"""Tiny GPT-2 trained with DDP (gloo/CPU) on a locally built HF dataset + tokenizer.

Faults (--fault), applied on --fault-rank (or all ranks where noted):
  none          healthy run
  map_attr      a record with text=None in the fault rank's corpus; map(num_proc) fn calls .lower()
  pad_missing   tokenizer built without a pad token, map pads to max_length
  vocab         model sized with tokenizer.vocab_size, an added special token appears on the fault rank
  collate       map without padding, default DataLoader collate of ragged input_ids
  loader_worker with_transform label lookup fails on one label inside a DataLoader worker
  len_mismatch  batched map with return_overflowing_tokens but original columns kept
  cast          cast_column('label', ClassLabel) when the fault rank has an unknown label
  shards        dataset saved with many shards then reloaded (for ulimit -n tests)
Cache directory (--cache-dir) is where load_dataset builds its arrow files.
"""
import argparse
import contextlib
import json
import logging
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_texts, build_tokenizer, build_model  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--rows", type=int, default=400)
p.add_argument("--num-proc", type=int, default=None)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--cache-dir", default="/work/rr89/dt/cache")
p.add_argument("--data-dir", default="/work/rr89/dt/data")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--long-texts", action="store_true")
p.add_argument("--seq-len", type=int, default=64)
p.add_argument("--main-first", action="store_true")
p.add_argument("--batch-size", type=int, default=8)
args = p.parse_args()


def setup(rank_override=None, world_override=None):
    if rank_override is not None:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["RANK"] = str(rank_override)
        os.environ["WORLD_SIZE"] = str(world_override)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    return rank, world


rank, world = setup()

if args.logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info
else:
    def say(msg):
        print(f"[rank{rank}] {msg}", flush=True)

import datasets  # noqa: E402
from datasets import load_dataset, ClassLabel  # noqa: E402


@contextlib.contextmanager
def main_process_first():
    if world > 1 and rank != 0:
        dist.barrier()
    yield
    if world > 1 and rank == 0:
        dist.barrier()


is_fault = (rank == args.fault_rank) or args.fault_rank < 0

# ---- corpus on disk (one json-lines file per rank) ----
os.makedirs(args.data_dir, exist_ok=True)
data_file = os.path.join(args.data_dir, f"corpus_{args.fault}_r{rank}.jsonl")
extra = "<|sep|> reply" if (args.fault == "vocab" and is_fault) else None
texts = make_texts(args.rows, seed=rank, extra=extra, extra_every=37)
if args.long_texts:
    texts = [t + (" " + t) * 60 if i % 50 == 0 else t for i, t in enumerate(texts)]
labels = ["pos" if i % 3 else "neg" for i in range(len(texts))]
if args.fault in ("cast", "loader_worker") and is_fault:
    labels[257 % len(labels)] = "neutral"
with open(data_file, "w") as f:
    for i, (t, l) in enumerate(zip(texts, labels)):
        rec = {"id": i, "text": t, "label": l}
        if args.fault == "map_attr" and is_fault and i == 311:
            rec["text"] = None
        f.write(json.dumps(rec) + "\n")

say(f"world_size={world} datasets={datasets.__version__} torch={torch.__version__} cache_dir={args.cache_dir}")

ctx = main_process_first() if args.main_first else contextlib.nullcontext()
with ctx:
    raw = load_dataset("json", data_files=data_file, split="train", cache_dir=args.cache_dir)
say(f"loaded {raw.num_rows} rows from {data_file}")
if args.fault == "concat":
    # extra augmentation data exported by another tool; on the fault rank its ids were written as strings
    aug_file = os.path.join(args.data_dir, f"augment_r{rank}.jsonl")
    with open(aug_file, "w") as f:
        for i, t in enumerate(make_texts(100, seed=99 + rank)):
            f.write(json.dumps({"id": f"aug-{i}" if is_fault else 10000 + i, "text": t, "label": "pos"}) + "\n")
    aug = load_dataset("json", data_files=aug_file, split="train", cache_dir=args.cache_dir)
    say(f"augmentation rows {aug.num_rows} features {aug.features}")
    raw = datasets.concatenate_datasets([raw, aug])
    say(f"combined rows {raw.num_rows}")

tok = build_tokenizer(pad=(args.fault != "pad_missing"))
if args.fault == "vocab":
    tok.add_special_tokens({"additional_special_tokens": ["<|sep|>"]})
vocab = tok.vocab_size  # NOTE: excludes tokens added after training
say(f"tokenizer vocab_size={tok.vocab_size} len(tokenizer)={len(tok)} pad_token={tok.pad_token}")

if args.fault == "cast":
    raw = raw.cast_column("label", ClassLabel(names=["neg", "pos"]))


import threading  # noqa: E402
_stats_lock = threading.Lock()
_seen = [0]
_batch_ids = (i for i in range(10**9))  # running batch counter


def normalize(batch):
    if args.fault == "hashwarn":
        with _stats_lock:  # count rows processed (lock makes the function unhashable for the cache)
            _seen[0] += len(batch["text"])
            next(_batch_ids)
    return {"text": [t.lower().strip() for t in batch["text"]]}


def tokenize(batch):
    if args.fault == "collate":
        return tok(batch["text"], truncation=True, max_length=args.seq_len)
    if args.fault == "len_mismatch":
        return tok(batch["text"], truncation=True, max_length=8, return_overflowing_tokens=True,
                   padding="max_length")
    if args.long_texts:
        enc = tok(batch["text"])
        return {"input_ids": [(x + [tok.pad_token_id] * args.seq_len)[:args.seq_len] for x in enc["input_ids"]]}
    return tok(batch["text"], truncation=True, max_length=args.seq_len, padding="max_length")


ds = raw.map(normalize, batched=True, num_proc=args.num_proc, desc=f"normalize (rank {rank})")
remove = ["text", "id"] if args.fault != "len_mismatch" else None
ds = ds.map(tokenize, batched=True, num_proc=args.num_proc, remove_columns=remove,
            desc=f"tokenize (rank {rank})")

if args.fault == "shards":
    out = os.path.join(args.cache_dir, f"sharded_r{rank}")
    ds.save_to_disk(out, num_shards=min(ds.num_rows, 300))
    ds = datasets.load_from_disk(out)
    say(f"reloaded {len(ds.cache_files)} shards from {out}")

LABELS = {"neg": 0, "pos": 1}
if args.fault == "loader_worker":
    def to_tensors(batch):
        return {"input_ids": torch.tensor(batch["input_ids"]),
                "labels_cls": torch.tensor([LABELS[l] for l in batch["label"]])}
    ds = ds.with_transform(to_tensors)
else:
    cols = ["input_ids"]
    ds = ds.with_format("torch", columns=cols) if args.fault != "collate" else ds.with_format("torch", columns=cols)

collate = (lambda b: b) if args.fault == "list_collate" else None  # keep examples, stack later
loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                     persistent_workers=args.workers > 0, collate_fn=collate)

model = build_model(vocab)
if world > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
say(f"model params={sum(p.numel() for p in model.parameters())} steps={args.steps}")

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm.auto import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100)

step = 0
data_iter = iter(loader)
t0 = time.time()
for step in it:
    try:
        batch = next(data_iter)
    except StopIteration:
        data_iter = iter(loader)
        batch = next(data_iter)
    if isinstance(batch, list):
        batch = {"input_ids": torch.stack([ex["input_ids"] for ex in batch])}
    ids = batch["input_ids"]
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 5 == 0 or step == args.steps - 1:
        l = out.loss.detach().clone()
        if world > 1:
            dist.all_reduce(l)
            l /= world
        if rank == 0:
            msg = f"step {step} loss {l.item():.4f} tok/s {ids.numel() * (step + 1) * world / (time.time() - t0):.0f}"
            if args.tqdm:
                it.write(msg)
            else:
                say(msg)

if world > 1:
    dist.barrier()
say("training finished")
if world > 1:
    dist.destroy_process_group()
