"""HF model/dataset cache family: tiny GPT-2 fine-tune, model + tokenizer + dataset from local HF caches.
--launch spawn uses torch.multiprocessing.spawn; otherwise expects torchrun env or single process."""
import argparse, os, sys, datetime, warnings
import torch, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--model", default="acme/tiny-gpt2")
p.add_argument("--data", default=None, help="local json lines file, loaded with datasets")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--launch", default="env", choices=["env", "spawn"])
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--port", default="31310")
p.add_argument("--build-cache", default=None, help="only build a tiny model into this HF_HOME and exit")
a = p.parse_args()

def build_cache(home):
    # writes the tiny model in hub-cache layout (models--org--name/snapshots/<rev>) so from_pretrained finds it offline
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models, pre_tokenizers
    import string
    vocab = {c: i for i, c in enumerate(["<unk>", "<eos>"] + list(string.ascii_lowercase + string.digits + " .,!?'"))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>")); tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>")
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=len(vocab), n_positions=64)
    m = GPT2LMHeadModel(cfg)
    rev = "3f1c0a9d2b7e4c5f8a6d1e0b9c2a7f4e5d6c8b1a"
    org, name = a.model.split("/")
    snap = os.path.join(home, "hub", f"models--{org}--{name}", "snapshots", rev)
    os.makedirs(snap, exist_ok=True)
    m.save_pretrained(snap); tok.save_pretrained(snap)
    os.makedirs(os.path.join(home, "hub", f"models--{org}--{name}", "refs"), exist_ok=True)
    open(os.path.join(home, "hub", f"models--{org}--{name}", "refs", "main"), "w").write(rev)
    print("built", snap, os.listdir(snap))

def main(local_rank=0, world=1):
    if a.launch == "spawn":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=a.port)
        dist.init_process_group("gloo", rank=local_rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    elif "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=25))
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    from transformers import AutoTokenizer, AutoModelForCausalLM
    print(f"[rank{rank}] loading {a.model} (HF_HOME={os.environ.get('HF_HOME')}, offline={os.environ.get('HF_HUB_OFFLINE')})", flush=True)
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model)
    if a.data:
        from datasets import load_dataset
        ds = load_dataset("json", data_files=a.data, split="train")
        texts = [r["text"] for r in ds]
    else:
        texts = ["the quick brown fox jumps over the lazy dog", "hello world, this is a tiny model", "gloo on cpu is slow but fine"] * 8
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        chunk = texts[(step * world + rank) % len(texts):][:4] or texts[:4]
        enc = tok(chunk, return_tensors="pt", padding=True, truncation=True, max_length=48)
        out = model(**enc, labels=enc["input_ids"])
        opt.zero_grad(); out.loss.backward(); opt.step()
        if step % 3 == 0:
            print(f"[rank{rank}] step {step} loss {out.loss.item():.4f}", flush=True)
    print(f"[rank{rank}] done", flush=True)
    if dist.is_initialized():
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    if a.build_cache:
        build_cache(a.build_cache); sys.exit(0)
    if a.launch == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main, args=(a.nproc,), nprocs=a.nproc)
    else:
        main()
