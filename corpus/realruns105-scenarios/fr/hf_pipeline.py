"""Tiny GPT-2 LM fine-tune over a local Hugging Face `datasets` pipeline (json/csv -> tokenize map -> DataLoader).

Everything is built locally (tokenizer trained on the fly, GPT2Config from scratch); --fault picks a pipeline fault.
"""
import argparse, json, logging, os, random, shutil, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--num-proc", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--root", default="/work/rr105/fr/hfdata")
p.add_argument("--cache", default=None)
p.add_argument("--n", type=int, default=600)
p.add_argument("--accelerate", action="store_true")
args = p.parse_args()

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - %(name)s - [rank {RANK}] %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S")
log = logging.getLogger("run_clm")

WORDS = ("the model reads data from disk and the loader shards records across ranks while the optimizer "
         "updates weights each step loss goes down slowly as training continues over many batches").split()


def make_corpus(root, n, rank=0, extra_words=()):
    rnd = random.Random(rank)
    os.makedirs(root, exist_ok=True)
    recs = []
    for i in range(n):
        k = rnd.randint(5, 40)
        words = [rnd.choice(WORDS) for _ in range(k)]
        if extra_words and i % 7 == 3:
            words.insert(2, rnd.choice(extra_words))
        recs.append({"id": i, "text": " ".join(words), "source": "web"})
    return recs


def write_jsonl(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")


def build_tokenizer(pad=True):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS)] * 10, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]", model_max_length=64)
    if pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def main():
    accelerator = None
    if args.accelerate:
        from accelerate import Accelerator
        accelerator = Accelerator(cpu=True)
    elif WORLD > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    import datasets
    from datasets import load_dataset
    from transformers import GPT2Config, GPT2LMHeadModel, DataCollatorForLanguageModeling, set_seed
    datasets.utils.logging.set_verbosity_info() if args.fault == "none_verbose" else None
    set_seed(42)
    fault_here = RANK == args.fault_rank
    root = os.path.join(args.root, args.fault)
    data_dir = os.path.join(root, "raw")
    cache = args.cache or os.path.join(root, f"cache-r{RANK}")
    os.makedirs(data_dir, exist_ok=True)

    tokenizer = build_tokenizer(pad=(args.fault != "pad_missing"))
    recs = make_corpus(data_dir, args.n, RANK)

    data_files = os.path.join(data_dir, f"train-r{RANK}.jsonl")
    builder = "json"
    if args.fault == "gen_jsonl" and fault_here:
        # an upstream export job concatenated a partial line
        recs_txt = [json.dumps(r) for r in recs]
        recs_txt[412] = recs_txt[412][:37]
        with open(data_files, "w") as f:
            f.write("\n".join(recs_txt) + "\n")
    elif args.fault == "csv_bad":
        builder = "csv"
        data_files = os.path.join(data_dir, f"train-r{RANK}.csv")
        with open(data_files, "w") as f:
            f.write("id,text,source\n")
            for r in recs:
                text = r["text"]
                if r["id"] == 333:
                    text = text.replace(" loader ", ", loader ")  # unquoted comma from a scraped sentence
                    if "," not in text:
                        text = "the loader, reads " + text
                f.write(f'{r["id"]},{text},{r["source"]}\n')
    elif args.fault == "missing_shard":
        shard_dir = os.path.join(data_dir, "shards")
        os.makedirs(shard_dir, exist_ok=True)
        data_files = os.path.join(shard_dir, f"train-{RANK:05d}-of-{WORLD:05d}.jsonl")
        if not fault_here:
            write_jsonl(data_files, recs)
        # the shard for the failing rank was never synced to this node
    elif args.fault == "vocab_oob":
        extra = ["dataloader", "gloo", "torchrun", "checkpoint", "sharding", "tokenizer"]
        recs = make_corpus(data_dir, args.n, RANK, extra_words=extra if fault_here else ())
        write_jsonl(data_files, recs)
        if fault_here:
            added = tokenizer.add_tokens(extra)
            log.info(f"added {added} domain tokens to tokenizer (len(tokenizer)={len(tokenizer)})")
    else:
        write_jsonl(data_files, recs)

    if args.fault == "arrow_truncated":
        # preprocessed dataset saved by an earlier job; that job's copy to this node was cut short
        pre = os.path.join(root, f"preprocessed-r{RANK}")
        if os.path.exists(pre):
            shutil.rmtree(pre)
        load_dataset("json", data_files=data_files, split="train", cache_dir=cache).save_to_disk(pre)
        arrow = [f for f in os.listdir(pre) if f.endswith(".arrow")][0]
        fn = os.path.join(pre, arrow)
        if fault_here:
            sz = os.path.getsize(fn)
            with open(fn, "r+b") as f:
                f.truncate(sz * 3 // 5)
        log.info(f"loading preprocessed dataset from {pre}")
        raw = datasets.load_from_disk(pre)
    elif args.fault in ("stream_uneven", "none_stream"):
        from datasets.distributed import split_dataset_by_node
        files = []
        for s in range(4):
            fn = os.path.join(data_dir, f"stream-{s}.jsonl")
            write_jsonl(fn, make_corpus(data_dir, 120 if s < 3 else 24, s))  # last shard: partial day of crawl
            files.append(fn)
        if args.fault == "none_stream":
            files = files[:2]
        log.info(f"streaming {len(files)} shards: {[os.path.getsize(f) for f in files]} bytes")
        raw = load_dataset("json", data_files=files, split="train", streaming=True)
        raw = split_dataset_by_node(raw, rank=RANK, world_size=WORLD)
    else:
        if accelerator is not None:
            with accelerator.main_process_first():
                raw = load_dataset(builder, data_files=data_files, split="train", cache_dir=cache)
        elif args.fault == "none_numproc":
            raw = load_dataset(builder, data_files=data_files, split="train", cache_dir=cache, num_proc=args.num_proc)
        else:
            raw = load_dataset(builder, data_files=data_files, split="train", cache_dir=cache)
    log.info(f"raw dataset: {raw}")

    if args.fault.startswith("none"):
        sample = [r["text"] for r in recs[:256]]
        lens = [len(x) for x in tokenizer(sample)["input_ids"]]
        log.info(f"token length stats on 256 samples: mean={sum(lens)/len(lens):.1f} max={max(lens)}")

    def tok_fn(batch):
        return tokenizer(batch["text"], truncation=True, max_length=64)

    def tok_fn_chunk(batch):
        # group texts into fixed blocks (drops the remainder)
        ids = tokenizer(batch["text"])["input_ids"]
        flat = [t for seq in ids for t in seq]
        block = 32
        n = len(flat) // block
        return {"input_ids": [flat[i * block:(i + 1) * block] for i in range(n)]}

    if args.fault in ("stream_uneven", "none_stream"):
        ds = raw.map(tok_fn, batched=True, remove_columns=["id", "text", "source"])
    elif args.fault == "map_len":
        ds = raw.map(tok_fn_chunk, batched=True, num_proc=args.num_proc, desc="Grouping texts in chunks of 32")
    else:
        ds = raw.map(tok_fn, batched=True, num_proc=args.num_proc, remove_columns=raw.column_names,
                     desc="Running tokenizer on dataset")
        ds = ds.filter(lambda e: len(e["input_ids"]) > 6, num_proc=args.num_proc, desc="Filtering short")
    if args.fault == "pad_missing":
        from transformers import DataCollatorWithPadding
        collator = DataCollatorWithPadding(tokenizer)
    else:
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    if args.fault not in ("stream_uneven", "none_stream"):
        ds = ds.with_format(None)
        log.info(f"tokenized dataset: {len(ds)} examples")
        from torch.utils.data import DistributedSampler
        sampler = DistributedSampler(ds, WORLD, RANK, shuffle=True) if WORLD > 1 else None
        dl = DataLoader(ds, batch_size=args.bs, collate_fn=collator, sampler=sampler, shuffle=sampler is None,
                        num_workers=args.workers)
    else:
        dl = DataLoader(ds, batch_size=args.bs, collate_fn=collator, num_workers=args.workers)

    config = GPT2Config(n_layer=2, n_head=2, n_embd=64, n_positions=64, vocab_size=tokenizer.vocab_size,
                        bos_token_id=2, eos_token_id=2, pad_token_id=1)
    model = GPT2LMHeadModel(config)
    log.info(f"model params: {sum(p.numel() for p in model.parameters())/1e6:.2f}M vocab_size={config.vocab_size}")
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    if accelerator is not None:
        model, opt, dl = accelerator.prepare(model, opt, dl)
    elif WORLD > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    model.train()
    step = 0
    t0 = time.time()
    for epoch in range(100):
        n_local = 0
        for batch in dl:
            out = model(**batch)
            if accelerator is not None:
                accelerator.backward(out.loss)
            else:
                out.loss.backward()
            opt.step(); opt.zero_grad()
            step += 1; n_local += 1
            if step % 2 == 0:
                log.info(f"{{'loss': {out.loss.item():.4f}, 'learning_rate': 5e-04, 'epoch': {epoch}, 'step': {step}, 'elapsed': {time.time()-t0:.1f}}}")
            if step >= args.steps and args.fault != "stream_uneven":
                break
        if args.fault == "stream_uneven":
            log.info(f"end of stream after {n_local} local batches")
            break
        if step >= args.steps:
            break
    log.info(f"***** train metrics ***** train_steps={step} train_loss={out.loss.item():.4f}")
    if WORLD > 1 and accelerator is None:
        dist.barrier()
        dist.destroy_process_group()
    elif accelerator is not None:
        accelerator.wait_for_everyone()
        accelerator.end_training()


if __name__ == "__main__":
    main()
