# Family: datasets pipeline (load_dataset from local jsonl, map(num_proc), filter, chat template)
# feeding a hand-written DDP training loop of a tiny GPT-2. Offline.
import argparse, os, sys, json, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hfcommon import build_tokenizer, make_texts, tiny_gpt2

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-dir", default="runs/data")
p.add_argument("--cache", default=None)
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--map-procs", type=int, default=2)
p.add_argument("--min-words", type=int, default=3)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=45020)
p.add_argument("--pg-timeout", type=int, default=30)
a = p.parse_args()


def write_data(rank):
    os.makedirs(a.data_dir, exist_ok=True)
    for r in range(2):
        path = os.path.join(a.data_dir, f"train-{r:05d}.jsonl")
        if os.path.exists(path):
            continue
        texts = make_texts(200, seed=10 + r)
        with open(path + ".tmp", "w") as fh:
            for i, t in enumerate(texts):
                rec = {"id": f"{r}-{i}", "text": t, "source": "forum"}
                if a.fault == "null_text_in_shard" and r == 1 and i == 137:
                    rec["text"] = None  # scraped record with empty body
                fh.write(json.dumps(rec) + "\n")
                if a.fault == "malformed_jsonl" and r == 1 and i == 88:
                    fh.write('{"id": "1-88b", "text": "the cat sat on the mat", "source": "forum\n')  # cut-off line
        os.replace(path + ".tmp", path)


def main(rank, world):
    import torch, torch.distributed as dist
    from datetime import timedelta
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.pg_timeout))
    from datasets import load_dataset
    from tqdm.auto import tqdm
    if rank == 0:
        write_data(rank)
    if world > 1:
        dist.barrier()
    bad = a.bad_rank < 0 or a.bad_rank == rank
    tok = build_tokenizer(pad=True, model_max_length=64)

    files = sorted(os.path.join(a.data_dir, f) for f in os.listdir(a.data_dir) if f.endswith(".jsonl"))
    if a.fault == "missing_data_file" and bad:
        files = [f.replace("train-", "train_") for f in files]  # glob written for the old naming scheme
    shard = files[rank % len(files)] if world > 1 else files
    print(f"[rank {rank}] loading {shard}", flush=True)
    ds = load_dataset("json", data_files=shard, split="train", cache_dir=a.cache)
    print(f"[rank {rank}] {len(ds)} raw records", flush=True)

    if a.fault == "chat_template" and bad:
        def fmt(ex):
            msgs = [{"role": "user", "content": "summarise: " + ex["text"]}, {"role": "assistant", "content": ex["text"][:20]}]
            return {"text": tok.apply_chat_template(msgs, tokenize=False)}
        ds = ds.map(fmt, num_proc=a.map_procs, desc="Applying chat template")

    if a.fault == "pairwise_overlap" and bad:
        import numpy as np
        def overlap_feature(batch):
            # bag-of-words with hashed vocab, then pairwise overlap inside the batch for near-dup detection
            V = 1 << 16
            bow = np.zeros((len(batch["text"]), V))
            for i, t in enumerate(batch["text"]):
                for w in t.split():
                    bow[i, hash(w) % V] += 1
            pair = (bow[:, None, :] * bow[None, :, :]).sum(-1)
            return {"max_overlap": (pair - np.diag(np.diag(pair))).max(1).tolist()}
        ds = ds.map(overlap_feature, batched=True, batch_size=1000, num_proc=a.map_procs, desc="Near-dup features")
    def count_words(ex):
        return {"n_words": len(ex["text"].split())}
    ds = ds.map(count_words, num_proc=a.map_procs, desc="Counting words")
    min_words = a.min_words
    if a.fault == "empty_after_filter" and bad:
        min_words = 300  # meant characters, compared to word count
    ds = ds.filter(lambda ex: ex["n_words"] >= min_words, num_proc=a.map_procs, desc="Filtering short docs")
    print(f"[rank {rank}] {len(ds)} records after filter (min_words={min_words})", flush=True)

    def tokenize(batch):
        enc = tok(batch["text"], truncation=True, max_length=32, padding="max_length")
        enc["labels"] = [[t if m else -100 for t, m in zip(ids, am)] for ids, am in zip(enc["input_ids"], enc["attention_mask"])]
        return enc
    ds = ds.map(tokenize, batched=True, num_proc=a.map_procs, remove_columns=ds.column_names, desc="Tokenizing")
    ds.set_format("torch")

    from torch.utils.data import DataLoader, RandomSampler
    dl = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds))
    torch.manual_seed(0)
    model = tiny_gpt2(len(tok), n_positions=64)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    it = iter(dl)
    bar = tqdm(range(a.steps), desc=f"train r{rank}", disable=rank != 0)
    for step in bar:
        try:
            b = next(it)
        except StopIteration:
            it = iter(dl); b = next(it)
        out = model(**b)
        out.loss.backward(); opt.step(); opt.zero_grad()
        if step % 5 == 0:
            bar.write(f"step {step} loss {out.loss.item():.4f}")
    if rank == 0:
        print("training done", flush=True)
    if world > 1:
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    main(rank, world)


if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(a.spawn,), nprocs=a.spawn, join=True)
    else:
        main(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
