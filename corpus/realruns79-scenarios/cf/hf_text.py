"""Tiny GPT-2 text classifier on local JSONL shards via HF datasets + a locally built tokenizer.

Each rank reads its own shard (rank{r}.jsonl) with datasets.load_dataset("json"), tokenizes with
map(), set_format("torch"), and trains with a DataLoader (num_workers=2) and DataCollatorWithPadding.

--fault (planted on --bad-rank where it is per-rank):
  none        healthy (with --noise: over-long texts, unhashable map fn, tokenizer used before fork)
  badjson     bad-rank's shard has a line cut off mid-record (export interrupted)
  renamed     bad-rank's shard comes from a newer export where "text" was renamed "body"
  filterall   min-length filter tuned on another corpus: drops every row of bad-rank's shard
  addedtok    "<url>" added to the tokenizer, model embedding never resized; bad-rank's shard has URLs
  nulltext    bad-rank's shard has null texts; tokenization done on the fly in collate_fn (workers)
  nopad       tokenizer saved without a pad token; collator pads
  chat        prompts built with tokenizer.apply_chat_template on the base tokenizer
  missing     bad-rank's data_files path points to a shard that was never synced to that node
"""
import argparse, json, logging, os, sys, warnings, threading
from datetime import timedelta

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, RandomSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--n", type=int, default=80)
p.add_argument("--data", default="/work/rr79/cf/data/hf")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
p.add_argument("--accelerate", action="store_true")
args = p.parse_args()

WORDS = ("the a model data train loss value good bad great terrible movie film plot actor scene "
         "story music slow fast boring fun long short happy sad love hate watch again never always "
         "best worst one two three it was is not very really quite ending start middle").split()


def build_tokenizer(path, pad=True):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]", model_max_length=48)
    if pad:
        kw["pad_token"] = "[PAD]"
    hf = PreTrainedTokenizerFast(**kw)
    hf.save_pretrained(path)


def write_shard(rank, path):
    rng = np.random.default_rng(rank + 7)
    rows = []
    for i in range(args.n):
        L = int(rng.integers(6, 30))
        if args.noise and i % 17 == 5:
            L = 70  # a few very long reviews
        if args.fault == "filterall" and rank == args.bad_rank:
            L = int(rng.integers(3, 8))  # short-form tweets in this shard
        text = " ".join(rng.choice(WORDS, L))
        if args.fault == "addedtok" and rank == args.bad_rank and i % 9 == 4:
            text += " see <url> for more"
        rec = {"text": text, "label": int(i % 2)}
        if args.fault == "renamed" and rank == args.bad_rank:
            rec = {"body": text, "label": int(i % 2)}
        if args.fault == "nulltext" and rank == args.bad_rank and i % 11 == 7:
            rec["text"] = None
        rows.append(json.dumps(rec))
    with open(path, "w") as f:
        for j, r in enumerate(rows):
            if args.fault == "badjson" and rank == args.bad_rank and j == len(rows) - 3:
                f.write(r[: len(r) // 2] + "\n")  # cut mid-record
            else:
                f.write(r + "\n")


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.logging:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s - %(levelname)s - rank{rank} - %(name)s - %(message)s")
    log = logging.getLogger("hf_text")

    def out(msg):
        if args.logging:
            log.info(msg)
        else:
            print(f"[{rank}/{world}] {msg}", flush=True)

    torch.set_num_threads(1)
    accelerator = None
    if args.accelerate:
        from accelerate import Accelerator
        from accelerate.utils import InitProcessGroupKwargs
        accelerator = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=args.pg_timeout))])
        rank, world = accelerator.process_index, accelerator.num_processes
    elif world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))

    def barrier():
        if accelerator is not None:
            accelerator.wait_for_everyone()
        elif world > 1:
            dist.barrier()

    os.makedirs(args.data, exist_ok=True)
    tokdir = os.path.join(args.data, "tokenizer")
    if rank == 0:
        build_tokenizer(tokdir, pad=(args.fault != "nopad"))
    shard = os.path.join(args.data, f"rank{rank}.jsonl")
    write_shard(rank, shard)
    barrier()

    import datasets
    from transformers import AutoTokenizer, GPT2Config, GPT2ForSequenceClassification, DataCollatorWithPadding
    datasets.disable_progress_bars() if not args.tqdm else None
    tok = AutoTokenizer.from_pretrained(tokdir)
    if args.fault == "addedtok":
        tok.add_tokens(["<url>"])
    if args.fault == "chat":
        prompt = tok.apply_chat_template([{"role": "user", "content": "rate this movie"}], tokenize=False)
        out(f"prompt template: {prompt!r}")

    if args.noise:
        # warm up the tokenizer in the parent (uses rust parallelism), then fork workers
        enc = tok(["the movie was good"] * 64)
        out(f"tokenizer warmup: {len(enc['input_ids'])} rows")

    files = shard
    if args.fault == "missing" and rank == args.bad_rank:
        files = os.path.join("/mnt/local_ssd/datasets/reviews", f"rank{rank}.jsonl")
    ds = datasets.load_dataset("json", data_files={"train": files}, split="train",
                               cache_dir=os.path.join(args.data, f"cache{rank}"))
    out(f"loaded {ds.num_rows} rows, columns={ds.column_names}")

    lock = threading.Lock()

    def tokenize(batch):
        if args.noise:
            with lock:
                pass
        return tok(batch["text"], truncation=not args.noise)

    if args.fault == "nulltext":
        ds = ds.rename_column("label", "labels")
        def collate(rows):
            enc = tok([r["text"] for r in rows], padding=True, truncation=True, return_tensors="pt")
            enc["labels"] = torch.tensor([r["labels"] for r in rows])
            return enc
    else:
        if args.fault == "filterall":
            ds = ds.filter(lambda r: len(r["text"].split()) >= 8)
            out(f"after length filter: {ds.num_rows} rows")
        ds = ds.map(tokenize, batched=True, remove_columns=["text"])
        ds = ds.rename_column("label", "labels")
        ds.set_format("torch", columns=["input_ids", "attention_mask", "labels"])
        collate = DataCollatorWithPadding(tok)

    loader = DataLoader(ds, batch_size=args.bs, sampler=RandomSampler(ds), num_workers=args.workers,
                        collate_fn=collate)
    cfg = GPT2Config(vocab_size=len(WORDS) + 3, n_layer=2, n_head=2, n_embd=64, n_positions=128,
                     num_labels=2, pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 1)
    torch.manual_seed(0)
    model = GPT2ForSequenceClassification(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if accelerator is not None:
        model, opt, loader = accelerator.prepare(model, opt, loader)
    elif world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    model.train()
    it = loader
    if args.tqdm:
        from tqdm.auto import tqdm
        it = tqdm(loader, total=min(args.steps, len(loader)), desc=f"train r{rank}", file=sys.stdout, ncols=90,
                  disable=rank != 0)
    step = 0
    for batch in it:
        outp = model(**batch)
        if accelerator is not None:
            accelerator.backward(outp.loss)
        else:
            outp.loss.backward()
        opt.step()
        opt.zero_grad()
        if not args.tqdm or rank != 0:
            out(f"step {step} loss={outp.loss.item():.4f} seq_len={batch['input_ids'].shape[1]}")
        step += 1
        if step >= args.steps:
            break
    barrier()
    out("done")
    if accelerator is None and world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
