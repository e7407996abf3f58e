"""DDP training of a tiny GPT2 on local jsonl shards, tokenized inside DataLoader workers.
--fault selects a bug injected on --fault-rank at --fault-step."""
import argparse, json, logging, os, signal, sys, time, warnings
from datetime import timedelta
import torch, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_common import build_tokenizer, make_shards

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--data", default="/work/rr61/ag/data/shards")
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", default="30510")
args = p.parse_args()

class ShardDataset(Dataset):
    def __init__(self, path, tok, fault_here):
        with open(path) as f:
            self.rows = [json.loads(l) for l in f]
        self.tok, self.fault_here = tok, fault_here
        if fault_here and args.fault == "keyerror":
            # second source was merged in with a different schema
            for i in range(12, len(self.rows), 3):
                r = self.rows[i]; self.rows[i] = {"id": r["id"], "content": r["text"]}
        if fault_here and args.fault == "newtoken":
            self.tok.add_special_tokens({"additional_special_tokens": ["<sep>", "<doc>"]})
            for i in range(len(self.rows)):
                self.rows[i]["text"] = "<doc> " + self.rows[i]["text"] + " <sep>"
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        if self.fault_here and args.fault == "slowread" and i % 7 == 3:
            time.sleep(30)   # stalled network read
        if self.fault_here and args.fault == "oomkill" and i % 11 == 5:
            os.kill(os.getpid(), signal.SIGKILL)   # what the OOM killer does to the worker
        r = self.rows[i]
        if args.fault in ("collate", "nopad"):
            enc = self.tok(r["text"])
        else:
            enc = self.tok(r["text"], padding="max_length", truncation=True, max_length=16)
        if args.fault == "nopad":
            return {"input_ids": enc["input_ids"]}
        return {"input_ids": torch.tensor(enc["input_ids"]), "attention_mask": torch.tensor(enc["attention_mask"])}

def run(rank, world):
    log = (lambda *a: logging.info(" ".join(str(x) for x in a))) if args.logging else (lambda *a: print(*a, flush=True))
    if args.logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    from transformers import GPT2Config, GPT2LMHeadModel
    fault_here = rank == args.fault_rank or world == 1
    tok = build_tokenizer(with_pad=not (args.fault == "nopad"))
    # warm the tokenizer in the parent (batch encode uses the rayon thread pool)
    tok(["warm up the tokenizer on the parent process"] * 64)
    shard = os.path.join(args.data, f"shard_{rank}.jsonl")
    if args.fault == "missing" and fault_here:
        shard = os.path.join(args.data, f"shard_{rank:05d}-of-{world:05d}.jsonl")
    ds = ShardDataset(shard, tok, fault_here)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok) if args.fault != "newtoken" else 32, n_layer=2, n_embd=64, n_head=4, n_positions=64))
    if args.fault == "newtoken":
        model.resize_token_embeddings(32)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    kw = dict(batch_size=args.bs, num_workers=args.workers, sampler=None, shuffle=(world == 1))
    if args.fault == "slowread":
        kw["timeout"] = 5
    if args.fault == "pickle" and fault_here:
        kw["multiprocessing_context"] = "spawn"
        kw["collate_fn"] = lambda b: {k: torch.stack([x[k] for x in b]) for k in b[0]}
    if args.fault == "nopad":
        from transformers import DataCollatorWithPadding
        kw["collate_fn"] = DataCollatorWithPadding(tok, return_tensors="pt")
    if args.workers and args.fault != "pickle":
        kw["persistent_workers"] = False
    dl = DataLoader(ds, **kw)
    log(f"rank {rank}/{world}: {len(ds)} samples from {shard}, {len(dl)} batches/epoch, workers={args.workers}")
    it = range(args.steps)
    step = 0
    model.train()
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=90)
    while step < args.steps:
        for batch in dl:
            out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
            out.loss.backward()
            opt.step(); opt.zero_grad()
            step += 1
            if bar:
                bar.update(1); bar.set_postfix(loss=f"{out.loss.item():.3f}")
            elif step % 2 == 0:
                log(f"rank {rank} step {step} loss {out.loss.item():.4f}")
            if step >= args.steps:
                break
    if bar: bar.close()
    if world > 1:
        t = torch.tensor([out.loss.item()]); dist.all_reduce(t)
        if rank == 0: log(f"final mean loss {t.item()/world:.4f}")
        dist.destroy_process_group()
    log(f"rank {rank} done")

def _spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    run(rank, world)

if __name__ == "__main__":
    if not os.path.exists(os.path.join(args.data, "shard_0.jsonl")):
        make_shards(args.data, n_shards=4)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
