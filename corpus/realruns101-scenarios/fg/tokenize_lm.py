"""Tiny GPT-2 language model on local JSONL text with a locally built tokenizer (offline)."""
import argparse, os, json, sys, time
from datetime import timedelta
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", default="data/tab/train.jsonl")
p.add_argument("--truncation", type=int, default=1)
p.add_argument("--pad-token", default="eos")
p.add_argument("--padding", default="collator")   # collator | tokenizer
p.add_argument("--num-proc", type=int, default=1)
p.add_argument("--long-doc-every", type=int, default=0, help="append a concatenated long document every N rows")
p.add_argument("--n-positions", type=int, default=64)
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--stats", type=int, default=0)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1: dist.init_process_group("gloo", timeout=timedelta(seconds=30))
import datasets
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, DataCollatorForLanguageModeling

tok = AutoTokenizer.from_pretrained("data/tok")
if args.pad_token == "eos": tok.pad_token = tok.eos_token
recs = [json.loads(l) for l in open(args.data)]
if args.long_doc_every:
    for i in range(0, len(recs), args.long_doc_every):
        recs[i]["text"] = " ".join(r["text"] for r in recs[i:i + 12])
ds = datasets.Dataset.from_list(recs)
if args.stats:
    lens = [len(x) for x in tok([r["text"] for r in recs])["input_ids"]]
    print(f"[rank{rank}] token length stats: min {min(lens)} max {max(lens)} mean {sum(lens)/len(lens):.1f} (model_max_length={tok.model_max_length})", flush=True)

def enc(batch):
    if args.truncation:
        return tok(batch["text"], truncation=True, max_length=args.n_positions)
    return tok(batch["text"])
ds = ds.map(enc, batched=True, batch_size=32, num_proc=args.num_proc if args.num_proc > 1 else None, remove_columns=["id", "text", "label"])

if args.padding == "collator":
    collate = DataCollatorForLanguageModeling(tok, mlm=False)
else:
    def collate(feats):
        b = tok.pad(feats, padding=True, return_tensors="pt")
        b["labels"] = b["input_ids"].clone(); return b

cfg = GPT2Config(vocab_size=len(tok), n_positions=args.n_positions, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
if world > 1: model = torch.nn.parallel.DistributedDataParallel(model)
sampler = DistributedSampler(ds, seed=0) if world > 1 else None
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, collate_fn=collate, num_workers=args.workers)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
step = 0
print(f"[rank{rank}] params={sum(p.numel() for p in model.parameters())} steps={args.max_steps}", flush=True)
while step < args.max_steps:
    for batch in dl:
        out = model(**batch)
        out.loss.backward(); opt.step(); opt.zero_grad(); step += 1
        if step % 5 == 0: print(f"[rank{rank}] step {step} loss {out.loss.item():.3f} seq_len {batch['input_ids'].shape[1]}", flush=True)
        if step >= args.max_steps: break
print(f"[rank{rank}] done", flush=True)
if world > 1: dist.destroy_process_group()
