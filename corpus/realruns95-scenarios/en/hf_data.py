"""Tiny GPT-2 language-model run on a local HF `datasets` corpus with a locally built tokenizer.
--fault selects what is wrong with the data / cache; --fault-rank where (under torchrun)."""
import argparse, os, json, random, glob, logging, warnings
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.distributed as dist
from torch.utils.data import DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--data", default="/tmp/rr95en/hf")
p.add_argument("--cache", default=None)
p.add_argument("--num-proc", type=int, default=2)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--docs", type=int, default=600)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--streaming", action="store_true")
p.add_argument("--fmt", default="json")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--nshards", type=int, default=3)
p.add_argument("--loader-shuffle", action="store_true")
args = p.parse_args()

WORDS = ("the model data loss step batch token rank worker shard cache arrow file train eval "
         "gradient layer norm attention head value key query residual embed vocab sample epoch").split()

def build_tokenizer(pad=True):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if pad: vocab["[PAD]"] = 3
    for w in WORDS: vocab.setdefault(w, len(vocab))
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=t, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if pad: kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)

def write_corpus(d, rank, nshards=3):
    os.makedirs(d, exist_ok=True)
    rng = random.Random(rank)
    docs = [{"id": i, "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))),
             "score": rng.random()} for i in range(args.docs)]
    per = len(docs) // nshards
    files = []
    for s in range(nshards):
        part = docs[s * per:(s + 1) * per]
        if args.fmt == "parquet":
            import pyarrow as pa, pyarrow.parquet as pq
            if args.fault == "schema" and s == nshards - 1:
                # last shard came from a newer export: score became a string, id renamed
                part = [{"doc_id": r["id"], "text": r["text"], "score": f"{r['score']:.3f}"} for r in part]
            fn = os.path.join(d, f"train-{s:05d}-of-{nshards:05d}.parquet")
            pq.write_table(pa.Table.from_pylist(part), fn)
        else:
            fn = os.path.join(d, f"train-{s:05d}-of-{nshards:05d}.jsonl")
            with open(fn, "w") as f:
                for r in part: f.write(json.dumps(r) + "\n")
        files.append(fn)
    return files

def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - rank{rank} - %(name)s - %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"[rank{rank}] {m}", flush=True)
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    import datasets
    from transformers import GPT2Config, GPT2LMHeadModel
    bad = (rank == args.fault_rank)
    d = os.path.join(args.data, f"corpus_r{rank}")
    files = write_corpus(d, rank, args.nshards)
    if bad and args.fault == "trunc":
        fn = files[1]; raw = open(fn, "rb").read(); open(fn, "wb").write(raw[: len(raw) // 2 + 17])
    log(f"corpus files: {[os.path.basename(f) for f in files]}")
    tok = build_tokenizer(pad=not (bad and args.fault == "nopad"))
    if args.fault == "tokfork":
        # quick vocab coverage check using the fast tokenizer's batch encode (Rust threads)
        enc = tok([" ".join(WORDS)] * 256)
        log(f"vocab coverage check: {sum(len(x) for x in enc['input_ids'])} tokens")
    cache = args.cache or os.path.join(args.data, f"cache_r{rank}")
    load_kw = dict(data_files={"train": files}, split="train")
    if args.streaming:
        ds = datasets.load_dataset(args.fmt, streaming=True, **load_kw)
    else:
        ds = datasets.load_dataset(args.fmt, cache_dir=cache, **load_kw)
        log(f"loaded {len(ds)} docs, features={ds.features}")
    def tokenize(batch):
        return tok(batch["text"], padding="max_length", truncation=True, max_length=32)
    if args.streaming:
        ds = ds.map(tokenize, batched=True, remove_columns=["id", "text", "score"]).with_format("torch")
    else:
        ds = ds.map(tokenize, batched=True, num_proc=args.num_proc, remove_columns=ds.column_names,
                    desc="Tokenizing")
        ds = ds.with_format("torch")
    if world > 1:
        dist.barrier()
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                     bos_token_id=1, eos_token_id=2)
    model = GPT2LMHeadModel(cfg)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(ds, batch_size=args.batch, num_workers=args.workers, shuffle=args.loader_shuffle)
    it = loader
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(loader, total=args.steps, ncols=100)
    step = 0
    for b in it:
        out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["input_ids"])
        opt.zero_grad(); out.loss.backward(); opt.step(); step += 1
        if step % 4 == 0:
            log(f"step {step} loss {out.loss.item():.4f}")
        if step >= args.steps:
            break
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log(f"done: {step} steps")

if __name__ == "__main__":
    main()
