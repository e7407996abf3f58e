"""HF datasets pipeline: load local jsonl, tokenize with datasets.map(num_proc), train tiny GPT2 a few
steps with a DataLoader, evaluate perplexity/accuracy offline. --fault selects a pipeline bug."""
import argparse, json, logging, math, os, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, torch
from torch.utils.data import DataLoader
from tok_common import build_tokenizer, make_shards

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--num-proc", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--min-len", type=int, default=0)
p.add_argument("--iterable", action="store_true")
p.add_argument("--prefetch", type=int, default=None)
p.add_argument("--work", default="/work/rr61/ag/data/hf")
args = p.parse_args()

def main():
    import datasets
    from datasets import load_dataset
    from transformers import GPT2Config, GPT2LMHeadModel, DataCollatorForLanguageModeling
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("pipeline")
    datasets.logging.set_verbosity_info() if args.fault == "none" else None
    shards = os.path.join(args.work, "raw")
    make_shards(shards, n_shards=2, n=80, seed=1)
    files = [os.path.join(shards, f) for f in sorted(os.listdir(shards)) if f.endswith(".jsonl")]
    if args.fault == "badjson":
        # a crawler export appended a truncated record
        bad = os.path.join(args.work, "raw_extra"); os.makedirs(bad, exist_ok=True)
        with open(os.path.join(bad, "part-0003.jsonl"), "w") as f:
            f.write('{"id": 900, "text": "the model data"}\n{"id": 901, "text": "stream eval metr\n')
        files.append(os.path.join(bad, "part-0003.jsonl"))
    if args.fault == "badjson" or args.fault == "batchlen":
        cache = os.path.join(args.work, f"cache_{args.fault}_{os.getpid()}")
    else:
        cache = os.path.join(args.work, f"cache_{os.getpid()}")
    raw = load_dataset("json", data_files={"train": files}, cache_dir=cache)["train"]
    log.info("raw dataset: %s", raw)
    tok = build_tokenizer()
    tok(["warm up " * 8] * 256)  # tokenizer used (parallel) in the parent before map forks

    def tokenize(batch):
        if args.fault == "mapkey":
            return tok([t.lower() for t in batch["body"]], truncation=True, max_length=32)
        enc = tok(batch["text"], truncation=True, max_length=32)
        if args.fault == "batchlen":
            # sliding-window chunking that returns more rows than it received
            ids = [x[i:i + 4] for x in enc["input_ids"] for i in range(0, len(x), 4)]
            return {"input_ids": ids}
        return enc

    rename = {"text": "body"} if args.fault == "mapkey" else {}
    if rename:
        # upstream schema: shard 1 (second half after concatenation) still uses "text"
        raw = datasets.concatenate_datasets([raw.select(range(80)).rename_column("text", "body"), raw.select(range(80, len(raw)))])
    ds = raw.map(tokenize, batched=True, batch_size=16, num_proc=args.num_proc, desc="Tokenizing")
    if args.fault != "batchlen":
        ds = ds.remove_columns([c for c in ds.column_names if c not in ("input_ids", "attention_mask")])
    if args.min_len:
        ds = ds.filter(lambda ex: len(ex["input_ids"]) >= args.min_len, num_proc=args.num_proc, desc="Filter short")
    log.info("tokenized: %s", ds)
    collate = DataCollatorForLanguageModeling(tok, mlm=False)
    if args.iterable or args.fault == "itershuffle":
        ids = ds.to_iterable_dataset(num_shards=1)
        dl = DataLoader(ids, batch_size=8, collate_fn=collate, num_workers=args.workers, shuffle=(args.fault == "itershuffle"))
    else:
        dl = DataLoader(ds, batch_size=8, collate_fn=collate, num_workers=args.workers, shuffle=True, prefetch_factor=args.prefetch)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=64,
                                       bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    step = 0
    preds, golds = [], []
    while step < args.steps:
        for batch in dl:
            out = model(**batch)
            out.loss.backward(); opt.step(); opt.zero_grad(); step += 1
            log.info("step %d loss %.4f ppl %.2f", step, out.loss.item(), math.exp(out.loss.item()))
            with torch.no_grad():
                lg = out.logits[:, :-1].argmax(-1); lb = batch["labels"][:, 1:]
                m = lb != -100
                preds.append(lg[m].numpy()); golds.append(lb[m].numpy())
            if step >= args.steps: break
    # offline metrics
    pr, gd = np.concatenate(preds), np.concatenate(golds)
    log.info("offline eval: token accuracy %.4f over %d tokens", (pr == gd).mean(), gd.size)
    log.info("done")

if __name__ == "__main__":
    main()
