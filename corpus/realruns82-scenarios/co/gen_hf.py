"""Tiny GPT-2 language model trained on a local toy corpus, then generation / saving. --fault selects the bug."""
import argparse, os, sys, time, math, logging
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, GenerationConfig
from tokenizers import Tokenizer, models, pre_tokenizers

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--out", default="/work/rr82/co/tmp_out/gpt")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--use-logging", action="store_true")
args = p.parse_args()
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("lm_train")
def out(m):
    if args.use_logging: log.info(m)
    else: print(m, flush=True)

CORPUS = ("the quick brown fox jumps over the lazy dog . a small model learns to count one two three four five . "
          "distributed training on many ranks needs careful evaluation and checkpointing . ") * 20

def build_tokenizer():
    words = sorted(set(CORPUS.split()))
    vocab = {"<unk>": 0, "<eos>": 1}
    for w in words: vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>", bos_token="<eos>")
    if args.fault not in ("pad_missing",):
        kw["pad_token"] = "<eos>"
    return PreTrainedTokenizerFast(**kw)

def main():
    ddp = "RANK" in os.environ
    rank, world = 0, 1
    if ddp:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    tok = build_tokenizer()
    ids = tok(CORPUS, return_tensors="pt")["input_ids"][0]
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    seq = 32; bs = 8; t0 = time.time()
    for step in range(1, args.steps + 1):
        starts = torch.randint(0, len(ids) - seq - 1, (bs,))
        x = torch.stack([ids[s:s + seq] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(); loss.backward(); opt.step()
        if step % args.log_every == 0 and rank == 0:
            out(f"step {step:4d} | loss {loss.item():.4f} | ppl {math.exp(loss.item()):8.2f} | {(time.time()-t0)/step*1000:.0f} ms/it")
    out(f"[rank {rank}] training finished after {args.steps} steps")
    raw = model.module if ddp else model
    raw.eval()
    prompts = ["the quick brown", "a small model learns"]
    f = args.fault
    if f == "ddp_generate":
        gen = model.generate(**tok(prompts[:1], return_tensors="pt"), max_new_tokens=10)
    elif f == "pad_missing":
        batch = tok(prompts, return_tensors="pt", padding=True)
        gen = raw.generate(**batch, max_new_tokens=10)
    elif f == "chat_template":
        msgs = [{"role": "user", "content": "count one two three"}]
        batch = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        gen = raw.generate(batch, max_new_tokens=10)
    elif f == "rep_penalty":
        gc = GenerationConfig(do_sample=True, top_k=0, top_p=0.9, temperature=0.7, repetition_penalty=0.0, max_new_tokens=20,
                              pad_token_id=tok.eos_token_id)
        gen = raw.generate(**tok(prompts[:1], return_tensors="pt"), generation_config=gc)
    elif f == "fp16_temp":
        raw = raw.half()
        gen = raw.generate(**tok(prompts[:1], return_tensors="pt"), do_sample=True, temperature=1e-5, max_new_tokens=20,
                           pad_token_id=tok.eos_token_id)
    elif f == "too_long":
        gen = raw.generate(**tok(prompts[:1], return_tensors="pt"), max_new_tokens=100, do_sample=False,
                           pad_token_id=tok.eos_token_id)
    elif f == "none_warn":
        enc = tok(prompts[:1], return_tensors="pt")
        gen = raw.generate(enc["input_ids"], max_new_tokens=12, do_sample=False)
        gen = raw.generate(enc["input_ids"], max_length=10, max_new_tokens=8, do_sample=True, temperature=0.7)
    else:
        enc = tok(prompts, return_tensors="pt", padding=True)
        gen = raw.generate(**enc, max_new_tokens=12, do_sample=False)
    if rank == 0:
        for g in gen: out("sample: " + tok.decode(g, skip_special_tokens=True))
    # ---- save ----
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        if f == "safetensors_shared":
            from safetensors.torch import save_file
            save_file(raw.state_dict(), os.path.join(args.out, "model.safetensors"), metadata={"step": str(args.steps)})
        elif f == "save_readonly":
            raw.save_pretrained(args.out)
        else:
            raw.save_pretrained(args.out); tok.save_pretrained(args.out)
        out(f"saved model to {args.out}")
    if ddp:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
