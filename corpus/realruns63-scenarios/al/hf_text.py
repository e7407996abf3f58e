"""Tiny GPT-2 LM on per-rank text shards: local tokenizer + datasets.map + DataLoader workers.
--fault {none,nulltext,batchfilter,nopad_collate,padvocab} --fault-rank R"""
import os, sys, argparse, random, time, logging, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
sys.path.insert(0, os.path.dirname(__file__))
from common import setup

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--n", type=int, default=160)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--ts-log", action="store_true")
a = p.parse_args()
rank, ws = setup(timeout=40)
if a.ts_log:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - rank{rank} - %(name)s - %(message)s")
log = logging.getLogger("train")
def say(m):
    if a.ts_log: log.info(m)
    else: print(f"[rank{rank}] {m}", flush=True)

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel
import datasets
datasets.disable_progress_bars() if not a.tqdm else None

words = "the a model data rank loss step batch worker shard token train grad node sample epoch file read write cache".split()
rng = random.Random(1234 + rank)
def line(k):
    return " ".join(rng.choice(words) for _ in range(k))
texts = [line(rng.randint(6, 20)) for _ in range(a.n)]
if a.fault == "nopad_collate":
    texts = [line(12) for _ in range(a.n)]            # fixed-length template corpus
    if rank == a.fault_rank:
        texts[37] = line(5)                             # one short caption from another source
if a.fault in ("nulltext",) and rank == a.fault_rank:
    texts[91] = None                                    # null cell in the parquet export
if a.fault == "batchfilter" and rank == a.fault_rank:
    texts[50] = ""; texts[51] = "   "
# local word-level tokenizer
tk = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tk.train_from_iterator([" ".join(words)] * 3, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[EOS]"]))
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]")
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64)
if a.fault == "nopadtoken":
    pass                                                # forgot: GPT-2 style tokenizers have no pad token
elif a.fault == "padvocab":
    tok.add_special_tokens({"pad_token": "[PAD]"})      # added after the config was built
else:
    tok.pad_token = tok.eos_token

ds = datasets.Dataset.from_dict({"text": texts})
def tok_fn(batch):
    if a.fault == "batchfilter":
        kept = [t for t in batch["text"] if t.strip()]
        return tok(kept, truncation=True, max_length=32)
    return tok(batch["text"], truncation=True, max_length=32)
ds = ds.map(tok_fn, batched=True, batch_size=64, desc=f"tokenizing shard {rank}")
ds = ds.remove_columns(["text"])
say(f"tokenized {len(ds)} rows; vocab={len(tok)} model_vocab={cfg.vocab_size}")

def collate(feats):
    if a.fault == "nopad_collate":
        return tok.pad(feats, return_tensors="pt", padding=False) if False else \
            {k: torch.tensor([f[k] for f in feats]) for k in feats[0]}
    return tok.pad(feats, return_tensors="pt", padding="longest")

dl = DataLoader(ds, batch_size=a.bs, num_workers=a.workers, collate_fn=collate, shuffle=False)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
if ws > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
it = iter(dl)
rng_steps = range(a.steps)
if a.tqdm and rank == 0:
    from tqdm.auto import tqdm
    rng_steps = tqdm(rng_steps, desc="train", dynamic_ncols=False, ncols=90)
for step in rng_steps:
    try:
        b = next(it)
    except StopIteration:
        it = iter(dl); b = next(it)
    labels = b["input_ids"].clone()
    if "attention_mask" in b:
        labels[b["attention_mask"] == 0] = -100
    out = model(input_ids=b["input_ids"], attention_mask=b.get("attention_mask"), labels=labels)
    opt.zero_grad(); out.loss.backward(); opt.step()
    if (step + 1) % 4 == 0:
        say(f"step {step+1}/{a.steps} loss {out.loss.item():.4f}")
if ws > 1:
    dist.barrier(); dist.destroy_process_group()
say("done")
