"""Accelerate + HF datasets: per-rank local JSONL/CSV shards -> tokenized -> tiny MLP classifier."""
import argparse, os, sys, json, random, csv
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fmt", default="json")
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--per-file", type=int, default=200)
p.add_argument("--files", type=int, default=2)
p.add_argument("--cache", default="hfcache")
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

WORDS = "alpha beta gamma delta eps zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()

def prepare():
    rng = random.Random(1)
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.nranks):
        for fi in range(args.files):
            rows = [{"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))), "label": rng.randint(0, 3)}
                    for _ in range(args.per_file)]
            bad = (r == args.bad_rank and fi == args.files - 1)
            if args.fmt == "json":
                fn = os.path.join(args.prepare, f"rank{r}-part{fi}.jsonl")
                lines = [json.dumps(x) for x in rows]
                if bad and args.fault == "badline":
                    lines[137] = lines[137][:-9]          # truncated record
                with open(fn, "w") as f: f.write("\n".join(lines) + "\n")
            else:
                fn = os.path.join(args.prepare, f"rank{r}-part{fi}.csv")
                cols = ["text", "label"]
                if bad and args.fault == "missingcol":
                    cols = ["text"]                       # export dropped the label column
                with open(fn, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore"); w.writeheader()
                    for x in rows: w.writerow(x)
    print("prepared", args.prepare)

def main():
    from accelerate import Accelerator
    from datasets import load_dataset
    acc = Accelerator(cpu=True)
    rank = acc.process_index
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    ext = "jsonl" if args.fmt == "json" else "csv"
    files = sorted(os.path.join(args.data, f) for f in os.listdir(args.data) if f.startswith(f"rank{rank}-") and f.endswith(ext))
    print(f"[rank{rank}] loading {len(files)} files: {files}", flush=True)
    ds = load_dataset(args.fmt, data_files={"train": files}, cache_dir=os.path.join(args.cache, f"rank{rank}"))["train"]
    vocab = {w: i + 1 for i, w in enumerate(WORDS)}
    def enc(b):
        ids = [[vocab.get(w, 0) for w in t.split()][:12] for t in b["text"]]
        return {"ids": [x + [0] * (12 - len(x)) for x in ids]}
    ds = ds.map(enc, batched=True).with_format("torch", columns=["ids", "label"])
    dl = DataLoader(ds, batch_size=16, shuffle=True)
    model = nn.Sequential(nn.EmbeddingBag(len(WORDS) + 1, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    for ep in range(args.epochs):
        for b in dl:
            loss = F.cross_entropy(model(b["ids"]), b["label"])
            opt.zero_grad(); acc.backward(loss); opt.step()
            if step % 10 == 0:
                acc.print(f"epoch {ep} step {step} loss {loss.item():.4f}")
            step += 1
    acc.wait_for_everyone()
    acc.print("finished")
    acc.end_training()

if __name__ == "__main__":
    if args.prepare: prepare()
    else: main()
