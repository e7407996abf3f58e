#!/usr/bin/env python
"""Tiny GPT-2 language model fine-tune on a locally built word-level tokenizer (single process).
--fault none | new_tokens_no_resize | eval_pad"""
import argparse, logging, math, os, random, sys, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--steps", type=int, default=1500)
p.add_argument("--eval-every", type=int, default=0); p.add_argument("--ctx-from-step", type=int, default=800)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s | %(message)s", stream=sys.stdout)
log = logging.getLogger("hf_lm")

random.seed(0); torch.manual_seed(0)
WORDS = "the a model loss gradient token batch shard worker rank step epoch checkpoint data train eval learn rate warm decay".split()
def sentence(r, n=None):
    return " ".join(r.choice(WORDS) for _ in range(n or r.randint(5, 14)))
corpus = [sentence(random) for _ in range(2000)]
tk = Tokenizer(models.WordLevel(unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tk.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]", "<eos>"]))
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<eos>")
log.info("tokenizer built: vocab=%d", len(tok))
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
model = GPT2LMHeadModel(cfg)
log.info("model: %d params", sum(p.numel() for p in model.parameters()))
if args.fault == "new_tokens_no_resize":
    added = tok.add_special_tokens({"additional_special_tokens": ["<ctx>", "</ctx>"]})
    log.info("added %d context marker tokens; vocab now %d", added, len(tok))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
ids_stream = tok(" <eos> ".join(corpus))["input_ids"]
r = random.Random(1)
model.train()
for step in range(args.steps):
    if args.fault == "new_tokens_no_resize" and step >= args.ctx_from_step and step % 3 == 0:
        # retrieval-augmented samples: context wrapped in marker tokens
        text = "<ctx> " + sentence(r, 8) + " </ctx> " + sentence(r, 20)
        ids = tok(text, truncation=True, max_length=32)["input_ids"]
        batch = torch.tensor([ids[:32]] * 4)
    else:
        starts = [r.randrange(0, len(ids_stream) - 33) for _ in range(4)]
        batch = torch.tensor([ids_stream[s:s + 32] for s in starts])
    out = model(input_ids=batch, labels=batch)
    out.loss.backward(); opt.step(); opt.zero_grad()
    log.info("step %d/%d loss %.4f ppl %.1f", step, args.steps, out.loss.item(), math.exp(min(out.loss.item(), 20)))
    if args.eval_every and step and step % args.eval_every == 0:
        model.eval()
        val = [sentence(r) for _ in range(8)]
        enc = tok(val, padding=True, return_tensors="pt")  # batched eval needs padding
        with torch.no_grad():
            vl = model(**enc, labels=enc["input_ids"]).loss
        log.info("eval step %d val_loss %.4f", step, vl.item())
        model.train()
log.info("done")
