"""Training that starts from artifacts prepared earlier on disk (a saved tokenized dataset, a
tokenizer directory, raw json-lines files), each rank reading its own part.

--prepare            write the artifacts (run once, single process)
--damage KIND        damage one artifact the way it happens in practice:
    truncate_arrow   copy interrupted: cut the arrow file of part --fault-rank to 60%
    bad_jsonl        a writer crashed mid-line: part --fault-rank raw file ends with a half record
    truncate_tok     tokenizer.json cut short (partial sync)
Training: torchrun / plain python; loads part RANK of the dataset.
"""
import argparse
import json
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_texts, build_tokenizer, build_model  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--root", default="/work/rr89/dt/data/artifacts")
p.add_argument("--prepare", action="store_true")
p.add_argument("--parts", type=int, default=2)
p.add_argument("--damage", default=None)
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--source", default="arrow", choices=["arrow", "jsonl"])
p.add_argument("--steps", type=int, default=20)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--cache-dir", default="/tmp/dt_art_cache")
args = p.parse_args()

if args.prepare:
    import datasets
    tok = build_tokenizer(save_dir=os.path.join(args.root, "tokenizer"))
    for r in range(args.parts):
        texts = make_texts(3000, seed=50 + r)
        with open(os.path.join(args.root, f"raw_part{r}.jsonl"), "w") as f:
            for i, t in enumerate(texts):
                f.write(json.dumps({"id": i, "text": t, "source": "web"}) + "\n")
        ds = datasets.Dataset.from_dict({"text": texts})
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=48, padding="max_length"),
                    batched=True, remove_columns=["text"])
        ds.save_to_disk(os.path.join(args.root, f"tokenized_part{r}"))
    print("prepared", os.listdir(args.root))
    sys.exit(0)

if args.damage:
    r = args.fault_rank
    if args.damage == "truncate_arrow":
        d = os.path.join(args.root, f"tokenized_part{r}")
        fn = [os.path.join(d, x) for x in os.listdir(d) if x.endswith(".arrow")][0]
        size = os.path.getsize(fn)
        os.truncate(fn, int(size * 0.6))
        print(f"truncated {fn} {size} -> {int(size * 0.6)}")
    elif args.damage == "bad_jsonl":
        fn = os.path.join(args.root, f"raw_part{r}.jsonl")
        with open(fn, "a") as f:
            f.write('{"id": 3000, "text": "the model learns a token from data while ranks sh')
        print(f"appended half record to {fn}")
    elif args.damage == "truncate_tok":
        fn = os.path.join(args.root, "tokenizer", "tokenizer.json")
        size = os.path.getsize(fn)
        os.truncate(fn, size // 2)
        print(f"truncated {fn} {size} -> {size // 2}")
    sys.exit(0)

import logging  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s - %(message)s")
log = logging.getLogger(f"trainer.rank{rank}")
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
log.info("starting rank %d/%d, artifacts in %s", rank, world, args.root)

import datasets  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

tok = AutoTokenizer.from_pretrained(os.path.join(args.root, "tokenizer"))
log.info("tokenizer loaded: %s vocab=%d", type(tok).__name__, len(tok))

if args.source == "arrow":
    ds = datasets.load_from_disk(os.path.join(args.root, f"tokenized_part{rank}"))
else:
    raw = datasets.load_dataset("json", data_files=os.path.join(args.root, f"raw_part{rank}.jsonl"),
                                split="train", cache_dir=args.cache_dir)
    ds = raw.map(lambda b: tok(b["text"], truncation=True, max_length=48, padding="max_length"),
                 batched=True, remove_columns=raw.column_names)
log.info("dataset part %d: %d rows, columns %s", rank, ds.num_rows, ds.column_names)
ds = ds.with_format("torch", columns=["input_ids", "attention_mask"])
loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)

model = build_model(len(tok))
if world > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
t0 = time.time()
for step, batch in enumerate(loader):
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"])
    out.loss.backward()
    opt.step()
    opt.zero_grad()
    if step % 5 == 0:
        log.info("step=%d loss=%.4f lr=%.1e %.2fs/it", step, out.loss.item(), 2e-3, (time.time() - t0) / (step + 1))
    if step + 1 >= args.steps:
        break
log.info("done")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
