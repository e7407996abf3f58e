"""Tiny causal-LM fine-tune on a local jsonl corpus with HF datasets + a locally built tokenizer."""
import argparse, json, os, random, sys, time
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr137/iu/data/corpus/train.jsonl")
p.add_argument("--make-corpus", default=None)
p.add_argument("--corpus-fault", default="none")
p.add_argument("--num-proc", type=int, default=2)
p.add_argument("--pad-token", default="[PAD]")
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--cache", default="/work/rr137/iu/hf_cache")
a = p.parse_args()

WORDS = "the a model data loss step train batch token shard rank worker cat dog ran fast slow over under".split()

def make_corpus(d):
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(0)
    rows = [{"id": i, "text": " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 30)))} for i in range(400)]
    if a.corpus_fault == "null-text":
        rows[317]["text"] = None          # a record whose text field failed to export
    with open(os.path.join(d, "train.jsonl"), "w") as f:
        for i, r in enumerate(rows):
            line = json.dumps(r)
            if a.corpus_fault == "cut-line" and i == 250:
                line = line[: len(line) // 2]  # writer died mid-line, next append continued on the same line
                f.write(line)
                continue
            f.write(line + "\n")
    print("wrote", len(rows), "rows to", d)

def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    if a.pad_token:
        kw["pad_token"] = a.pad_token
    return PreTrainedTokenizerFast(**kw)

def main():
    import torch, torch.distributed as dist
    from datasets import load_dataset
    from transformers import GPT2Config, GPT2LMHeadModel, DataCollatorWithPadding
    from torch.utils.data import DataLoader, DistributedSampler
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    tok = build_tokenizer()
    ds = load_dataset("json", data_files=a.data, split="train", cache_dir=a.cache)
    print(f"[rank {rank}] loaded {len(ds)} rows: {ds.column_names}", flush=True)
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, batch_size=50,
                num_proc=a.num_proc, remove_columns=["text", "id"], desc="Tokenizing")
    coll = DataCollatorWithPadding(tok, return_tensors="pt")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    dl = DataLoader(ds, batch_size=a.bs, sampler=sampler, shuffle=sampler is None, collate_fn=coll, num_workers=1)
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                     pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    step = 0
    from tqdm import tqdm
    for ep in range(a.epochs):
        if sampler: sampler.set_epoch(ep)
        bar = tqdm(dl, desc=f"[rank {rank}] epoch {ep}", disable=rank != 0, file=sys.stdout, mininterval=0, ncols=100)
        for batch in bar:
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels)
            opt.zero_grad(); out.loss.backward(); opt.step(); step += 1
            bar.set_postfix(loss=f"{out.loss.item():.3f}")
            if step >= a.max_steps: break
        print(f"[rank {rank}] epoch {ep} done, step {step}, last loss {out.loss.item():.4f}", flush=True)
    if distributed:
        dist.barrier(); dist.destroy_process_group()
    print(f"[rank {rank}] finished", flush=True)

if __name__ == "__main__":
    if a.make_corpus:
        make_corpus(a.make_corpus)
    else:
        main()
