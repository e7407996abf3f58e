"""Fine-tune a tiny GPT-2 for a few steps, then batched generate() evaluation.
--fault: none | pad_none | oob_vocab | maxlen | fp16_sample | right_pad
Runs single-process or under torchrun (gloo)."""
import argparse, logging, os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist
from tinyhf import make_tokenizer, make_gpt2, PROMPTS

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--max-new-tokens", type=int, default=8)
p.add_argument("--log-ts", action="store_true")
p.add_argument("--vocab-from-tokenizer", action="store_true", help="size the model from len(tokenizer) as the old script did")
a = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if a.log_ts:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("gen_eval")
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
mine = a.fault_rank == rank

vocab = len(make_tokenizer(with_pad=True))
tok = make_tokenizer(with_pad=not (a.fault == "pad_none" and mine))
if a.vocab_from_tokenizer:
    vocab = len(tok)
if a.fault == "oob_vocab" and mine:
    # eval tokenizer was extended with new words, model config still uses the old vocab
    tok = make_tokenizer(with_pad=True, extra_words=40)
model = make_gpt2(vocab_size=vocab, n_positions=24 if a.fault == "maxlen" else 64)
log.info("model params=%d vocab=%d n_positions=%d world=%d", sum(p.numel() for p in model.parameters()),
         model.config.vocab_size, model.config.n_positions, world)
if world > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
texts = PROMPTS * 2
for step in range(a.steps):
    b = tok(texts[step % 4::4], return_tensors="pt", padding=True) if tok.pad_token else None
    if b is None:
        ids = torch.tensor([tok(t)["input_ids"][:3] for t in texts[:4]])
        b = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    labels = b["input_ids"].masked_fill(b["attention_mask"] == 0, -100)
    out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=labels)
    out.loss.backward(); opt.step(); opt.zero_grad()
    log.info("train step %d/%d loss=%.4f", step + 1, a.steps, out.loss.item())
raw = model.module if world > 1 else model
raw.eval()
if a.fault == "fp16_sample" and mine:
    raw.half()   # "halve memory for inference"
if a.fault != "right_pad":
    tok.padding_side = "left"
gen_kw = dict(max_new_tokens=a.max_new_tokens, pad_token_id=tok.pad_token_id)
if a.fault == "fp16_sample":
    pass
if a.fault == "maxlen":
    gen_kw["max_new_tokens"] = 40
shard = PROMPTS[rank::world]
if a.fault == "oob_vocab" and mine:
    shard = [s + " w35 w39" for s in shard]
log.info("eval: generating for %d prompts (padding_side=%s)", len(shard), tok.padding_side)
enc = tok(shard, return_tensors="pt", padding=True)
with torch.no_grad():
    if a.fault == "fp16_sample":
        # hand-rolled sampler (no KV cache) kept from the old eval script
        out = enc["input_ids"]; am = enc["attention_mask"]
        for _ in range(a.max_new_tokens):
            logits = raw(input_ids=out, attention_mask=am).logits[:, -1, :]
            probs = torch.softmax(logits / 1e-5, dim=-1)
            nxt = torch.multinomial(probs, 1)
            out = torch.cat([out, nxt], 1); am = torch.cat([am, torch.ones_like(nxt)], 1)
    else:
        out = raw.generate(**enc, **gen_kw)
texts_out = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
avg_len = sum(len(t.split()) for t in texts_out) / max(len(texts_out), 1)
for s, t in zip(shard, texts_out):
    print(f"[rank{rank}] {s!r} -> {t!r}", flush=True)
log.info("eval done: avg generated words=%.2f", avg_len)
if world > 1:
    dist.barrier(); dist.destroy_process_group()
