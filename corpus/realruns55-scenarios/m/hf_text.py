"""HF datasets + tokenizer pipeline feeding a tiny GPT-2 under DDP (gloo, CPU), all local/offline."""
import argparse, os, sys, json, logging, warnings
from datetime import timedelta
import torch, torch.distributed as dist, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--data", default="/work/rr55/m/data/text")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", default="30120")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("hf_text")

def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = "the a of to and in is it that was for on with as his he be at by i this had not are but from or have an they which one you were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people mr how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three".split()
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for w in words: vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    t = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>", model_max_length=64)
    if args.fault not in ("no_pad",):
        t.pad_token = t.eos_token
    return t

def load_data(rank):
    from datasets import load_dataset, concatenate_datasets
    d = args.data
    if args.fault == "bad_json":
        return load_dataset("json", data_files={"train": f"{d}/train_*.jsonl"}, split="train")
    if args.fault == "missing_file":
        return load_dataset("json", data_files={"train": f"{d}/train_00.jsonl", "validation": f"{d}/valid.jsonl"})["train"]
    if args.fault == "unknown_split":
        return load_dataset("json", data_files={"train": f"{d}/train_00.jsonl"}, split="validation")
    if args.fault == "concat":
        a = load_dataset("json", data_files=f"{d}/train_00.jsonl", split="train")
        b = load_dataset("json", data_files=f"{d}/extra_labels.jsonl", split="train")
        return concatenate_datasets([a, b])
    if args.fault == "schema":
        return load_dataset("json", data_files=f"{d}/scraped.jsonl", split="train")
    if args.fault in ("too_long", "none_warn"):
        return load_dataset("json", data_files=f"{d}/long.jsonl", split="train")
    return load_dataset("json", data_files=f"{d}/train_00.jsonl", split="train")

def run(rank, world):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = args.port
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    elif "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    from transformers import GPT2Config, GPT2LMHeadModel
    tok = build_tokenizer()
    if args.fault == "added_tokens":
        n = tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>", "<|system|>"]})
        log.info(f"added {n} special tokens, len(tokenizer)={len(tok)}")
    ds = load_data(rank)
    log.info(f"rank {rank}: loaded {len(ds)} rows, columns={ds.column_names}")
    if args.fault == "added_tokens":
        ds = ds.map(lambda ex: {"text": "<|user|> " + ex["text"] + " <|assistant|> ok"})
    maxlen = 64 if args.fault != "too_long" else None
    def tok_fn(batch):
        if args.fault == "none_warn":
            lens = [len(x) for x in tok(batch["text"])["input_ids"]]  # length stats for the report
        if maxlen is None:
            return tok(batch["text"])
        return tok(batch["text"], truncation=True, max_length=maxlen)
    ds = ds.map(tok_fn, batched=True, remove_columns=ds.column_names)
    cfg = GPT2Config(vocab_size=tok.vocab_size if args.fault == "added_tokens" else len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=64,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    if args.fault in ("no_pad", "none", "added_tokens", "too_long", "none_warn"):
        from transformers import DataCollatorForLanguageModeling
        collate = DataCollatorForLanguageModeling(tok, mlm=False)
    else:
        collate = DataCollatorForLanguageModeling(tok, mlm=False)
    dl = DataLoader(ds, batch_size=8, sampler=sampler, collate_fn=collate)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    it = iter(dl)
    for step in range(args.steps):
        try:
            b = next(it)
        except StopIteration:
            it = iter(dl); b = next(it)
        out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
        opt.zero_grad(); out.loss.backward(); opt.step()
        if rank == 0: log.info(f"step {step}/{args.steps} loss={out.loss.item():.4f} lr=1.0e-03")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    if rank == 0: log.info("finished training")

if __name__ == "__main__" and args.spawn:
    import torch.multiprocessing as mp
    mp.spawn(run, args=(args.spawn,), nprocs=args.spawn)
elif __name__ == "__main__":
    run(0, 1)
