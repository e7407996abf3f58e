"""Tiny GPT-2 (built from config) trained with HF Accelerate on a locally built word-level tokenizer.

Each rank streams its own documents (DATA/docs_rank{r}.txt, one document per line) and cuts them into
chunks of --chunk words; batches are tokenized on the fly.
"""
import argparse, os, time, math, warnings
from datetime import timedelta
import torch
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.utils import set_seed
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, get_linear_schedule_with_warmup

p = argparse.ArgumentParser()
p.add_argument("--data-dir", required=True)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--chunk", type=int, default=16)
p.add_argument("--pad", action="store_true", help="pad batches (needs a pad token)")
p.add_argument("--set-pad-token", action="store_true")
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--out", default="")
args = p.parse_args()

acc = Accelerator(gradient_accumulation_steps=args.grad_accum,
                  kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=20))])
set_seed(0)
torch.set_num_threads(1)

vocab_words = open(os.path.join(args.data_dir, "vocab.txt")).read().split()
vocab = {w: i for i, w in enumerate(["[UNK]", "[BOS]"] + vocab_words)}
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]")
if args.set_pad_token:
    tok.pad_token = tok.unk_token
acc.print(f"tokenizer: {len(tok)} tokens, pad_token={tok.pad_token}")

cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.bos_token_id)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
model, opt, sched = acc.prepare(model, opt, sched)

r = acc.process_index
docs = open(os.path.join(args.data_dir, f"docs_rank{r}.txt")).read().splitlines()


def chunks():
    while True:
        for d in docs:
            w = d.split()
            for i in range(0, len(w), args.chunk):
                yield " ".join(w[i:i + args.chunk])


it = chunks()
t0 = time.time()
model.train()
for step in range(args.steps):
    texts = [next(it) for _ in range(args.batch)]
    if args.pad:
        enc = tok(texts, return_tensors="pt", padding=True)
    else:
        enc = tok(texts, return_tensors="pt")
    labels = enc["input_ids"].clone()
    if "attention_mask" in enc:
        labels[enc["attention_mask"] == 0] = -100
    with acc.accumulate(model):
        out = model(input_ids=enc["input_ids"], attention_mask=enc.get("attention_mask"), labels=labels)
        acc.backward(out.loss)
        opt.step()
        sched.step()
        opt.zero_grad()
    if (step + 1) % 5 == 0:
        l = acc.gather(out.loss.detach().reshape(1)).mean().item()
        acc.print(f"step {step + 1}/{args.steps} | loss {l:.4f} | ppl {math.exp(l):.1f} | lr {sched.get_last_lr()[0]:.2e} | {time.time() - t0:.1f}s")

acc.wait_for_everyone()
if args.out:
    acc.save_model(model, args.out)
    acc.print(f"saved to {args.out}")
acc.print("done")
acc.end_training()
