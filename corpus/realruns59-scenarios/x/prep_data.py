"""Data preparation with a multiprocessing Pool before training (tokenise jsonl shards -> .pt)."""
import argparse, json, os, sys, glob, time, warnings
import multiprocessing as mp
from tqdm import tqdm
p = argparse.ArgumentParser()
p.add_argument("--src", default="/work/rr59/x/work/corpus")
p.add_argument("--dst", default="/work/rr59/x/work/tok")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--mode", default="ok")   # ok | corrupt | local_fn | lenient
p.add_argument("--start", default="fork")
args = p.parse_args()

VOCAB = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz .,")}

def make_corpus(n_shards=6, corrupt=False):
    os.makedirs(args.src, exist_ok=True)
    import random; rnd = random.Random(0)
    for s in range(n_shards):
        with open(f"{args.src}/part-{s:05d}.jsonl", "w") as f:
            for i in range(200):
                txt = "".join(rnd.choice("abcdefghij klmnop") for _ in range(40))
                line = json.dumps({"id": f"{s}-{i}", "text": txt})
                if corrupt and s == 3 and i == 117:
                    line = line[:23]  # partial write from an interrupted crawler
                f.write(line + "\n")

def tokenize_shard(path):
    out = []
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            if args.mode == "lenient":
                try: rec = json.loads(line)
                except json.JSONDecodeError:
                    print(f"WARNING: {os.path.basename(path)}:{ln}: malformed record skipped", file=sys.stderr, flush=True); continue
            else:
                rec = json.loads(line)
            out.append([VOCAB[c] for c in rec["text"]])
    time.sleep(0.3)
    return path, len(out)

def main():
    make_corpus(corrupt=args.mode in ("corrupt", "lenient"))
    shards = sorted(glob.glob(f"{args.src}/*.jsonl"))
    print(f"prep: {len(shards)} shards, {args.workers} workers, start method {args.start}", flush=True)
    ctx = mp.get_context(args.start)
    fn = tokenize_shard
    if args.mode == "local_fn":
        vocab = dict(VOCAB)
        def fn(path):  # closure so each worker uses the run's vocab
            with open(path) as f:
                return path, sum(1 for _ in f)
    total = 0
    with ctx.Pool(args.workers) as pool:
        for path, n in tqdm(pool.imap_unordered(fn, shards), total=len(shards), desc="tokenize", file=sys.stdout):
            total += n
    os.makedirs(args.dst, exist_ok=True)
    open(f"{args.dst}/DONE", "w").write(str(total))
    print(f"prep: wrote {total} sequences to {args.dst}", flush=True)

if __name__ == "__main__":
    main()
