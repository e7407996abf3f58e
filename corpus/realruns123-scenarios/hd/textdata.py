"""Causal-LM fine-tuning on per-rank JSONL shards with a tiny local GPT-2 and a word-level tokenizer."""
import argparse, os, sys, json, math, random, logging
import torch, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--per-rank", type=int, default=96)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--max-len", type=int, default=64)
p.add_argument("--n-positions", type=int, default=128)
p.add_argument("--pad-mode", default="longest", help="longest | max_length | none")
p.add_argument("--truncate", default="yes")
p.add_argument("--no-pad-token", action="store_true")
p.add_argument("--stamp", action="store_true")
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--length-stats", action="store_true")
args = p.parse_args()

WORDS = ("the model data train loss rank shard token batch step epoch gradient layer node cluster "
         "file image audio text sample worker queue memory network update weight value").split()

def prepare():
    os.makedirs(args.prepare, exist_ok=True)
    rng = random.Random(0)
    for r in range(args.nranks):
        lines = []
        for i in range(args.per_rank):
            n = rng.randint(8, 40)
            lines.append(json.dumps({"id": f"r{r}-{i}", "text": " ".join(rng.choice(WORDS) for _ in range(n))}))
        if r == args.bad_rank:
            k = args.bad_step * args.bs + 1
            if args.fault == "badline":
                lines[k] = lines[k][: len(lines[k]) // 2]   # writer killed mid-line
            elif args.fault in ("long", "longok"):
                lines[k] = json.dumps({"id": f"r{r}-{k}", "text": " ".join(rng.choice(WORDS) for _ in range(700))})
            elif args.fault == "oneword":
                for j in range(k - 1, k + 3):
                    lines[j] = json.dumps({"id": f"r{r}-{j}", "text": rng.choice(WORDS)})   # only titles survived cleaning
            elif args.fault == "empty":
                for j in range(k - 1, k + 3):
                    lines[j] = json.dumps({"id": f"r{r}-{j}", "text": ""})   # scraper produced empty docs
        with open(os.path.join(args.prepare, f"train_rank{r}.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("prepared", args.prepare)

def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS: vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]", model_max_length=512)
    if not args.no_pad_token:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)

class JsonlText(Dataset):
    def __init__(self, path):
        self.rows = []
        with open(path) as f:
            self.lines = f.readlines()
    def __len__(self):
        return len(self.lines)
    def __getitem__(self, i):
        return json.loads(self.lines[i])["text"]

def main():
    rank, world = common.setup(30)
    log = common.get_logger("lm", rank, stamp=args.stamp)
    from transformers import GPT2Config, GPT2LMHeadModel
    tok = build_tokenizer()
    ds = JsonlText(os.path.join(args.data, f"train_rank{rank}.jsonl"))
    if args.length_stats:
        lens = [len(tok(ds[i])["input_ids"]) for i in range(len(ds))]
        log.info(f"token length stats: mean {sum(lens)/len(lens):.1f} max {max(lens)} (>{args.max_len}: {sum(l > args.max_len for l in lens)} docs, will be truncated)")
    def collate(texts):
        if args.pad_mode == "none":
            return [torch.tensor(tok(t)["input_ids"]) for t in texts]
        kw = dict(return_tensors="pt", padding=args.pad_mode)
        if args.pad_mode == "max_length":
            kw["max_length"] = args.max_len
        if args.truncate == "yes":
            kw["truncation"] = True; kw["max_length"] = args.max_len
        elif args.truncate == "model":
            kw["truncation"] = True   # tokenizer.model_max_length
        return tok(texts, **kw)
    def collate_none(texts):
        return torch.utils.data.default_collate([torch.tensor(tok(t)["input_ids"]) for t in texts])
    dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers,
                    collate_fn=collate_none if args.pad_mode == "none" else collate)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=args.n_positions, n_embd=64, n_layer=2, n_head=2,
                     pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 1)
    model = GPT2LMHeadModel(cfg)
    log.info(f"model params: {sum(p.numel() for p in model.parameters())/1e6:.2f}M, n_positions={cfg.n_positions}, shard {len(ds)} docs")
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    step = 0
    for ep in range(args.epochs):
        for batch in dl:
            ids = batch["input_ids"]; mask = batch["attention_mask"]
            labels = ids.masked_fill(mask == 0, -100)
            out = model(input_ids=ids, attention_mask=mask)
            logits = out.logits[:, :-1]
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100)
            if not math.isfinite(loss.item()):
                log.info(f"Loss is {loss.item()}, stopping training")
                sys.exit(1)
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 3 == 0:
                log.info(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} seq_len {ids.shape[1]}")
            step += 1
    log.info(f"done: {step} steps")
    common.cleanup()

if __name__ == "__main__":
    if args.prepare:
        prepare()
    else:
        main()
