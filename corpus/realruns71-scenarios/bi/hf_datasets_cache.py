"""Tokenise a locally generated text corpus with HF datasets (map with cache files) and
train a tiny GPT-2 on it; cache dir is configurable."""
import argparse, os, sys, logging, random
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--cache-dir", required=True)
p.add_argument("--n-docs", type=int, default=20000)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--num-proc", type=int, default=1)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("prep")
random.seed(0)
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
docs = [" ".join(random.choices(words, k=random.randint(50, 400))) for _ in range(args.n_docs)]
raw = Dataset.from_dict({"text": docs})
os.makedirs(args.cache_dir, exist_ok=True)
raw.save_to_disk(os.path.join(args.cache_dir, "raw"))
raw = Dataset.load_from_disk(os.path.join(args.cache_dir, "raw"))
log.info(f"raw corpus: {len(raw)} docs, cache at {args.cache_dir}")
vocab = {w: i + 1 for i, w in enumerate(words)}
def tok(b):
    ids = [[vocab[w] for w in t.split()] for t in b["text"]]
    return {"input_ids": ids, "char_ids": [[ord(c) for c in t] for t in b["text"]]}
ds = raw.map(tok, batched=True, num_proc=args.num_proc, desc="Tokenizing", remove_columns=["text"])
log.info(f"tokenized: {ds}")
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=16, n_positions=128, bos_token_id=0, eos_token_id=0))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    ids = torch.tensor([r[:128] for r in ds.select(range(step * 4, step * 4 + 4))["input_ids"]])
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward(); opt.step(); opt.zero_grad()
    log.info(f"step {step} loss {loss.item():.4f}")
log.info("done")
