import argparse, os, json, datetime, logging, warnings
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-idx", type=int, default=57)
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--shards", default="shards")
p.add_argument("--pg-timeout", type=int, default=20)
args = p.parse_args()

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel
import datasets

WORDS = "the a model data train loss step rank batch token text sample epoch value grad layer".split()

def build_tok():
    vocab = {"[PAD]": 0, "[UNK]": 1}
    for w in WORDS: vocab[w] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", pad_token="[PAD]")
    return tok

def texts(n=160):
    out = []
    for i in range(n):
        out.append(" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(6 + i % 5)))
    return out

class ShardStream(IterableDataset):
    """streams jsonl shards assigned round-robin to ranks"""
    def __init__(self, files, rank, ws, tok):
        self.files = files[rank::ws]; self.tok = tok
    def __iter__(self):
        wi = torch.utils.data.get_worker_info()
        files = self.files if wi is None else self.files[wi.id::wi.num_workers]
        for fn in files:
            with open(fn) as f:
                for line in f:
                    ids = self.tok(json.loads(line)["text"], padding="max_length", max_length=12, truncation=True)["input_ids"]
                    yield torch.tensor(ids)

def main():
    distributed = "WORLD_SIZE" in os.environ
    rank, ws = 0, 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        rank, ws = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    tok = build_tok()
    _ = tok(["warm up the tokenizer"] * 64)  # uses the Rust thread pool before the workers fork
    data = texts()
    if args.fault == "tok_none":
        data[args.bad_idx] = None  # record whose 'text' field was null in the export
    if args.fault == "load_json_bad":
        os.makedirs(args.shards, exist_ok=True)
        if rank == 0:
            for s in range(3):
                with open(f"{args.shards}/train-{s:03d}.jsonl", "w") as f:
                    for j, t in enumerate(data[s::3]):
                        line = json.dumps({"text": t, "id": j})
                        if s == 2 and j == 19: line = line[:-12]  # export job died mid-line
                        f.write(line + "\n")
        if distributed: dist.barrier()
        raw = datasets.load_dataset("json", data_files=sorted(os.path.join(args.shards, f) for f in os.listdir(args.shards)),
                                    split="train", cache_dir=os.path.join(args.shards, f"cache_r{rank}"))
        data = raw["text"]
    if args.fault == "iterable_uneven":
        os.makedirs(args.shards, exist_ok=True)
        if rank == 0:
            # 3 shards written for a 4-rank job: rank 3 gets none
            for s in range(ws - 1):
                with open(f"{args.shards}/part-{s:03d}.jsonl", "w") as f:
                    for t in data[s::ws]: f.write(json.dumps({"text": t}) + "\n")
        if distributed: dist.barrier()
        files = sorted(os.path.join(args.shards, f) for f in os.listdir(args.shards))
        ds = ShardStream(files, rank, ws, tok)
        dl = DataLoader(ds, batch_size=4, num_workers=2)
    else:
        raw = datasets.Dataset.from_dict({"text": data, "id": list(range(len(data)))})
        def enc(ex):
            if args.fault == "map_raise":
                # keep only the first sentence (records are assumed to contain a '.')
                ex["text"] = ex["text"][: ex["text"].index(".")] if rank == args.bad_rank and ex["id"] == args.bad_idx else ex["text"]
            return tok(ex["text"], padding="max_length", max_length=12, truncation=True)
        if args.fault == "tok_none":
            class TDS(torch.utils.data.Dataset):
                def __len__(s): return len(data)
                def __getitem__(s, i):
                    return torch.tensor(tok(data[i], padding="max_length", max_length=12, truncation=True)["input_ids"])
            tds = TDS()
        else:
            proc = raw.map(enc, remove_columns=["text", "id"])
            proc.set_format("torch", columns=["input_ids"])
            tds = proc
        sampler = DistributedSampler(tds) if distributed else None
        dl = DataLoader(tds, batch_size=4, sampler=sampler, num_workers=2,
                        collate_fn=(None if args.fault == "tok_none" else (lambda b: torch.stack([x["input_ids"] for x in b]))))
    cfg = GPT2Config(vocab_size=len(WORDS) + 2, n_layer=2, n_embd=64, n_head=2, n_positions=32)
    model = GPT2LMHeadModel(cfg)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    step = 0
    for ep in range(3):
        for ids in dl:
            out = model(input_ids=ids, labels=ids)
            opt.zero_grad(); out.loss.backward(); opt.step(); step += 1
            if step % 3 == 0:
                print(f"rank={rank} epoch={ep} step={step} loss={out.loss.item():.4f}", flush=True)
            if step >= args.steps: break
        if step >= args.steps: break
    print(f"rank={rank} finished {step} steps", flush=True)
    if distributed:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
